package node

// TxnOffsetCommit (key 28), versions 0-5: node/group's (group/txn.go),
// routed to the group's coordinator. The offsets are written to
// __consumer_offsets as the producer's transactional batch and stay pending
// (OffsetFetch with requireStable: UNSTABLE_OFFSET_COMMIT) until the
// transaction's marker commits or aborts them. v3 carries the member id
// and generation (KIP-447), checked as OffsetCommit checks them. The
// first offsets of a transaction on the group's partition are written only
// once the transaction's coordinator confirmed the partition was added
// (AddOffsetsToTxn; txn_verify.go): INVALID_TXN_STATE if not,
// PRODUCER_FENCED for a fenced epoch, COORDINATOR_LOAD_IN_PROGRESS (which
// clients retry) when the coordinator cannot answer now. v5 (KIP-890 part
// 2, transaction version 2) needs no AddOffsetsToTxn: the same call adds
// the group's partition to the transaction. v4 only lets the answer carry
// TRANSACTION_ABORTABLE, which Floe never sends.
//
// Authorization: WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition), READ on the
// group (GROUP_AUTHORIZATION_FAILED), READ on each topic
// (TOPIC_AUTHORIZATION_FAILED on its partitions; nothing is committed then).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/group"
)

func serveTxnOffsetCommit(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.TxnOffsetCommitRequest)
	az := r.authorize(c, req)
	answer := func(code func(topic string) int16) {
		respond(group.TxnOffsetCommitAnswer(req, func(ti, _ int) int16 { return code(req.Topics[ti].Topic) }))
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
	p := r.byName[topicPartition{group.OffsetsTopic, group.PartitionFor(req.Group, int32(len(r.offsetsTopic().Partitions)))}]
	if p == nil {
		answer(all(kerr.NotCoordinator.Code))
		return
	}
	r.verifyTxnPartition(req.TransactionalID, p, req.ProducerID, req.ProducerEpoch, req.Version >= 5, func(err error) {
		if code := txnOffsetsVerifyCode(err); code != 0 {
			answer(all(code))
			return
		}
		co.TxnOffsetCommit(r.monoNow(), req, func(resp *kmsg.TxnOffsetCommitResponse) { respond(resp) })
		r.queueProcess() // a verified write may run outside the request's turn
	})
}

// txnOffsetsVerifyCode is the TxnOffsetCommit code of a verification's
// error (verifyTxnPartition's, named for Produce).
func txnOffsetsVerifyCode(err error) int16 {
	code, _ := errParts(err)
	switch code {
	case kerr.InvalidProducerEpoch.Code:
		return kerr.ProducerFenced.Code
	case kerr.NotEnoughReplicas.Code, kerr.NotLeaderForPartition.Code:
		return kerr.CoordinatorLoadInProgress.Code
	default:
		return code
	}
}
