package node

// DescribeProducers (key 61), version 0 (KIP-664).
//
// For each partition this broker leads: the producers it remembers
// (committed state, as every replica agrees on it), with epoch, last
// sequence, the time of their last batch and, for a producer with a
// transaction open on the partition, the first offset of that transaction:
// what an operator needs to find a hanging transaction. The coordinator
// epoch of the last marker is not kept: always -1. A partition led
// elsewhere gets NOT_LEADER_OR_FOLLOWER, an unknown one
// UNKNOWN_TOPIC_OR_PARTITION.
//
// Authorization: READ on each topic (TOPIC_AUTHORIZATION_FAILED on its
// partitions), as Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func serveDescribeProducers(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	denied := deniedTopics(r.authorize(c, req), req.Topics, func(t kmsg.DescribeProducersRequestTopic) string { return t.Topic }, kmsg.ACLOperationRead)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		for _, part := range rt.Partitions {
			st.Partitions = append(st.Partitions, r.describeProducers(rt.Topic, part, denied[rt.Topic]))
		}
		resp.Topics = append(resp.Topics, st)
	}
	respond(resp)
}

// describeProducers answers one partition.
func (r *Reactor) describeProducers(topic string, part int32, denied bool) kmsg.DescribeProducersResponseTopicPartition {
	sp := kmsg.NewDescribeProducersResponseTopicPartition()
	sp.Partition = part
	if denied {
		sp.ErrorCode = errTopicAuth.Code
		return sp
	}
	p, code := r.readLeader(topic, part, -1)
	if p == nil {
		sp.ErrorCode = code
		return sp
	}
	for _, ap := range p.ActiveProducers() {
		a := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		a.ProducerID, a.ProducerEpoch, a.LastSequence, a.LastTimestamp = ap.ID, int32(ap.Epoch), ap.LastSeq, ap.LastMs
		a.CoordinatorEpoch, a.CurrentTxnStartOffset = ap.CoordEpoch, ap.TxnStartOffset
		sp.ActiveProducers = append(sp.ActiveProducers, a)
	}
	return sp
}

// expiredDescribeProducers is the answer when the request's deadline
// passes (it is answered at once, so only a stalled reactor gets it).
func expiredDescribeProducers(q *kmsg.DescribeProducersRequest) kmsg.Response {
	resp := q.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range q.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		for _, part := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition, sp.ErrorCode = part, kerr.RequestTimedOut.Code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
