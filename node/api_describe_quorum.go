package node

// DescribeQuorum (key 55), versions 0-2.
//
// The controller group as this broker knows it, under Kafka's name for
// the metadata log (__cluster_metadata, partition 0): its leader and term,
// commit index as the high watermark, voters and observers (learners).
// Only the controller's leader knows how far each member's log reaches:
// it answers with each member's acknowledged index as LogEndOffset;
// another broker answers -1 there (`floe controller describe` asks the
// controller). Timestamps are not kept (-1). Any other topic or
// partition gets UNKNOWN_TOPIC_OR_PARTITION.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metadataTopic is the name Kafka gives the controller's log.
const metadataTopic = "__cluster_metadata"

// Authorization: DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED).
func serveDescribeQuorum(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DescribeQuorumRequest)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if !r.authorize(c, req).cluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode = errClusterAuth.Code
		respond(resp)
		return
	}
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeQuorumResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			if t.Topic != metadataTopic || p.Partition != 0 {
				rp := kmsg.NewDescribeQuorumResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicOrPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			rt.Partitions = append(rt.Partitions, r.describeQuorum())
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Version >= 2 {
		resp.Nodes = r.quorumNodes()
	}
	respond(resp)
}

func (r *Reactor) describeQuorum() kmsg.DescribeQuorumResponseTopicPartition {
	st := r.ctl.rep.Status()
	rp := kmsg.NewDescribeQuorumResponseTopicPartition()
	rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = -1, int32(st.Term), int64(st.Commit)
	if st.Lead != 0 {
		rp.LeaderID = int32(st.Lead)
	}
	match := map[uint64]int64{}
	for _, pr := range st.Progress {
		match[pr.ID] = int64(pr.Match)
	}
	state := func(id uint64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		rs.ReplicaID, rs.LogEndOffset, rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = int32(id), -1, -1, -1
		if m, ok := match[id]; ok {
			rs.LogEndOffset = m
		}
		return rs
	}
	voters, learners := r.controllerVoters()
	for _, id := range voters {
		rp.CurrentVoters = append(rp.CurrentVoters, state(id))
	}
	for _, id := range learners {
		rp.Observers = append(rp.Observers, state(id))
	}
	return rp
}

// quorumNodes lists the members' Kafka addresses (v2), from the metadata.
func (r *Reactor) quorumNodes() []kmsg.DescribeQuorumResponseNode {
	voters, learners := r.controllerVoters()
	var out []kmsg.DescribeQuorumResponseNode
	for _, id := range append(voters, learners...) {
		b, ok := r.ctl.state.Brokers[int32(id)]
		if !ok {
			continue
		}
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = b.ID
		l := kmsg.NewDescribeQuorumResponseNodeListener()
		l.Name, l.Host, l.Port = "PLAINTEXT", b.KafkaHost, uint16(b.KafkaPort)
		n.Listeners = append(n.Listeners, l)
		out = append(out, n)
	}
	return out
}
