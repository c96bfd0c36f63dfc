package node

// TxnOffsetCommit (key 28), versions 0-3: node/group's (group/txn.go),
// routed to the group's coordinator. The offsets are written to
// __consumer_offsets as the producer's transactional batch and stay pending
// (OffsetFetch with requireStable: UNSTABLE_OFFSET_COMMIT) until the
// transaction's marker commits or aborts them. v3 carries the member id
// and generation (KIP-447), checked as OffsetCommit checks them. v4+
// (TRANSACTION_ABORTABLE, KIP-890 part 2's implicit add) is not advertised.
//
// Authorization: WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition), READ on the
// group (GROUP_AUTHORIZATION_FAILED), READ on each topic
// (TOPIC_AUTHORIZATION_FAILED on its partitions; nothing is committed then).

import "github.com/twmb/franz-go/pkg/kmsg"

func serveTxnOffsetCommit(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.TxnOffsetCommitRequest)
	az := r.authorize(c, req)
	answer := func(code func(topic string) int16) {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewTxnOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, code(rt.Topic)
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		respond(resp)
	}
	all := func(code int16) func(string) int16 { return func(string) int16 { return code } }
	switch {
	case !az.txnID(req.TransactionalID, kmsg.ACLOperationWrite):
		answer(all(errTxnAuth.Code))
		return
	case !az.group(req.Group, kmsg.ACLOperationRead):
		answer(all(errGroupAuth.Code))
		return
	}
	if denied := deniedTopics(az, req.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) string { return t.Topic }, kmsg.ACLOperationRead); len(denied) > 0 {
		answer(func(topic string) int16 {
			if denied[topic] {
				return errTopicAuth.Code
			}
			return 0
		})
		return
	}
	co, err := r.coordinatorFor(req.Group)
	if err != nil {
		answer(all(err.Code))
		return
	}
	co.TxnOffsetCommit(r.monoNow(), req, func(resp *kmsg.TxnOffsetCommitResponse) { respond(resp) })
}
