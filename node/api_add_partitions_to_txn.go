package node

// AddPartitionsToTxn (key 24), versions 0-4.
//
// Adds partitions to the producer's transaction at its coordinator
// (node/txn), starting the transaction if none is open; the client sends
// it before its first transactional produce to each partition. Answered
// once the coordinator's record committed.
//
// v4 is the broker-to-broker batched form (KIP-890 part 1): several
// transactions, each either added as above or, with VerifyOnly, only
// checked: per partition, nothing when it is part of the producer's ongoing
// transaction at that epoch, INVALID_TXN_STATE when not, the producer's
// error (PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING) or the coordinator's
// (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) on all its partitions.
// Floe's partition leaders ask the same question over a node RPC
// (txn_verify.go) served by the same code.
//
// Authorization: v0-3: WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition), WRITE on each
// topic (TOPIC_AUTHORIZATION_FAILED on its partitions, the others
// OPERATION_NOT_ATTEMPTED, as Kafka answers). v4: CLUSTER_ACTION on the
// cluster (CLUSTER_AUTHORIZATION_FAILED in the response's error code), as
// Kafka requires of a request only brokers send.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
	"github.com/floe-broker/floe/node/txn"
)

func serveAddPartitionsToTxn(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.AddPartitionsToTxnRequest)
	az := r.authorize(c, req)
	if req.Version >= 4 {
		if !az.may(kmsg.ACLResourceTypeCluster, acl.ClusterName, kmsg.ACLOperationClusterAction) {
			resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			respond(resp)
			return
		}
		serveAddPartitionsToTxnBatch(r, req, respond)
		return
	}
	answer := func(code func(topic string) int16) {
		resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewAddPartitionsToTxnResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, code(rt.Topic)
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		respond(resp)
	}
	all := func(code int16) func(string) int16 { return func(string) int16 { return code } }
	if r.buggify(bugAddPartitionsConcurrent) {
		answer(all(kerr.ConcurrentTransactions.Code)) // BUGGIFY: retriable, nothing done
		return
	}
	if !az.txnID(req.TransactionalID, kmsg.ACLOperationWrite) {
		answer(all(errTxnAuth.Code))
		return
	}
	denied := deniedTopics(az, req.Topics, func(t kmsg.AddPartitionsToTxnRequestTopic) string { return t.Topic }, kmsg.ACLOperationWrite)
	if len(denied) > 0 {
		answer(func(topic string) int16 {
			if denied[topic] {
				return errTopicAuth.Code
			}
			return kerr.OperationNotAttempted.Code
		})
		return
	}
	var tps []txn.TopicPartition
	for _, rt := range req.Topics {
		for _, p := range rt.Partitions {
			if !r.partitionExists(rt.Topic, p) {
				answer(func(topic string) int16 {
					if topic == rt.Topic {
						return kerr.UnknownTopicOrPartition.Code
					}
					return kerr.OperationNotAttempted.Code
				})
				return
			}
			tps = append(tps, txn.TopicPartition{Topic: rt.Topic, Partition: p})
		}
	}
	co, err := r.txnCoordinatorFor(req.TransactionalID)
	if err != nil {
		answer(all(err.Code))
		return
	}
	co.AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, tps, r.monoNow(), func(err *kerr.Error) {
		answer(all(codeOf(err)))
	})
}

// codeOf is the code of a coordinator's answer (nil: 0).
func codeOf(err *kerr.Error) int16 {
	if err == nil {
		return 0
	}
	return err.Code
}

// serveAddPartitionsToTxnBatch serves the v4 form: every transaction of
// req, answered once all are.
func serveAddPartitionsToTxnBatch(r *Reactor, req *kmsg.AddPartitionsToTxnRequest, respond func(kmsg.Response)) {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	resp.Transactions = make([]kmsg.AddPartitionsToTxnResponseTransaction, len(req.Transactions))
	remaining := 1
	finish := func() {
		if remaining--; remaining == 0 {
			respond(resp)
		}
	}
	for i := range req.Transactions {
		remaining++
		addOrVerify(r, &req.Transactions[i], &resp.Transactions[i], finish)
	}
	finish()
}

// addOrVerify serves one transaction of a v4 request into out and calls
// done once answered.
func addOrVerify(r *Reactor, in *kmsg.AddPartitionsToTxnRequestTransaction, out *kmsg.AddPartitionsToTxnResponseTransaction, done func()) {
	*out = kmsg.NewAddPartitionsToTxnResponseTransaction()
	out.TransactionalID = in.TransactionalID
	var tps []txn.TopicPartition
	for _, rt := range in.Topics {
		st := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
			sp.Partition = p
			st.Partitions = append(st.Partitions, sp)
			tps = append(tps, txn.TopicPartition{Topic: rt.Topic, Partition: p})
		}
		out.Topics = append(out.Topics, st)
	}
	// set gives partition i (in tps order) its code.
	set := func(code func(i int) int16) {
		i := 0
		for ti := range out.Topics {
			for pi := range out.Topics[ti].Partitions {
				out.Topics[ti].Partitions[pi].ErrorCode = code(i)
				i++
			}
		}
	}
	all := func(code int16) func(int) int16 { return func(int) int16 { return code } }
	co, err := r.txnCoordinatorFor(in.TransactionalID)
	if err != nil {
		set(all(err.Code))
		done()
		return
	}
	if in.VerifyOnly {
		errs, err := co.Verify(in.TransactionalID, in.ProducerID, in.ProducerEpoch, tps)
		if err != nil {
			set(all(err.Code))
		} else {
			set(func(i int) int16 { return codeOf(errs[i]) })
		}
		done()
		return
	}
	for i, tp := range tps {
		if !r.partitionExists(tp.Topic, tp.Partition) {
			set(func(j int) int16 {
				if tps[j].Topic == tps[i].Topic {
					return kerr.UnknownTopicOrPartition.Code
				}
				return kerr.OperationNotAttempted.Code
			})
			done()
			return
		}
	}
	co.AddPartitions(in.TransactionalID, in.ProducerID, in.ProducerEpoch, tps, r.monoNow(), func(err *kerr.Error) {
		set(all(codeOf(err)))
		done()
	})
}
