package node

// AddPartitionsToTxn (key 24), versions 0-3.
//
// Adds partitions to the producer's transaction at its coordinator
// (node/txn), starting the transaction if none is open; the client sends
// it before its first transactional produce to each partition. Answered
// once the coordinator's record committed. v4+ (the broker-to-broker
// batched form of KIP-890 part 1, VerifyOnly) is not advertised: a
// partition leader here verifies with the coordinator only when that
// coordinator is local (api_produce.go).
//
// Authorization: WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition), WRITE on each
// topic (TOPIC_AUTHORIZATION_FAILED on its partitions, the others
// OPERATION_NOT_ATTEMPTED, as Kafka answers).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/txn"
)

func serveAddPartitionsToTxn(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.AddPartitionsToTxnRequest)
	az := r.authorize(c, req)
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
