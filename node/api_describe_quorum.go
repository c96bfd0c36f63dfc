package node

// DescribeQuorum (key 55), versions 0-2.
//
// Any Raft group this cluster runs: the controller group under Kafka's
// name for the metadata log (__cluster_metadata, partition 0), and every
// partition under its topic's name. Each answers with its leader and term
// (the leader epoch), its commit index as the high watermark, its voters
// and observers (learners), and per member its acknowledged index as
// LogEndOffset, when its leader last heard from it (LastFetchTimestamp)
// and last saw it hold the leader's whole log (LastCaughtUpTimestamp).
// Indexes are Raft log entries, not Kafka offsets: the lag between two
// members is in entries (a produce round is one entry).
//
// Only a group's leader knows its members' progress. A partition is
// answered by its leader alone: another broker answers
// NOT_LEADER_OR_FOLLOWER (UNKNOWN_TOPIC_OR_PARTITION for one it has never
// heard of), as Kafka's partitions do. The controller group is answered
// by every broker, as before: a follower gives its leader and membership
// with -1 for what only the leader knows (`floe controller describe`
// asks the leader).
//
// Raft counts in ticks; the answer turns "heard N ticks ago" into a
// timestamp here, at the edge, with the environment's clock (the
// simulator's virtual clock under simulation): now - N x TickInterval.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/consensus"
)

// metadataTopic is the name Kafka gives the controller's log.
const metadataTopic = "__cluster_metadata"

// Authorization: DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED),
// for partitions too: the answer is about the cluster's replication.
func serveDescribeQuorum(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DescribeQuorumRequest)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if !r.authorize(c, req).cluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode = errClusterAuth.Code
		respond(resp)
		return
	}
	var members []uint64 // the members named in the answer, for Nodes (v2)
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeQuorumResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := r.describeQuorumOf(t.Topic, p.Partition)
			rt.Partitions = append(rt.Partitions, rp)
			for _, s := range append(append([]kmsg.DescribeQuorumResponseTopicPartitionReplicaState(nil), rp.CurrentVoters...), rp.Observers...) {
				members = append(members, uint64(s.ReplicaID))
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Version >= 2 {
		resp.Nodes = r.quorumNodes(members)
	}
	respond(resp)
}

// describeQuorumOf answers one group.
func (r *Reactor) describeQuorumOf(topic string, part int32) kmsg.DescribeQuorumResponseTopicPartition {
	if topic == metadataTopic {
		if part != 0 {
			rp := kmsg.NewDescribeQuorumResponseTopicPartition()
			rp.Partition, rp.ErrorCode = part, kerr.UnknownTopicOrPartition.Code
			return rp
		}
		voters, learners := r.controllerVoters()
		return r.quorumState(r.ctl.rep.Status(), voters, learners)
	}
	p, ok := r.byName[topicPartition{topic, part}]
	switch {
	case !ok:
		rp := kmsg.NewDescribeQuorumResponseTopicPartition()
		rp.Partition, rp.ErrorCode = part, r.missingPartition(topic, part).Code
		return rp
	case !p.IsLeader() || p.Replica() == nil:
		rp := kmsg.NewDescribeQuorumResponseTopicPartition()
		rp.Partition, rp.ErrorCode = part, kerr.NotLeaderForPartition.Code
		return rp
	}
	st := p.Replica().Status()
	if st.RaftState != consensus.StateLeader {
		// The partition's leader flag follows Raft's a Ready later.
		rp := kmsg.NewDescribeQuorumResponseTopicPartition()
		rp.Partition, rp.ErrorCode = part, kerr.NotLeaderForPartition.Code
		return rp
	}
	rp := r.quorumState(st, st.Config.Voters, st.Config.Learners)
	rp.Partition = part
	return rp
}

// quorumState is a group's answer from its replica's Raft status: member
// progress where that replica leads (Status.Progress), -1 elsewhere.
func (r *Reactor) quorumState(st consensus.Status, voters, learners []uint64) kmsg.DescribeQuorumResponseTopicPartition {
	rp := kmsg.NewDescribeQuorumResponseTopicPartition()
	rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = -1, int32(st.Term), int64(st.Commit)
	if st.Lead != 0 {
		rp.LeaderID = int32(st.Lead)
	}
	progress := map[uint64]consensus.PeerProgress{}
	for _, pr := range st.Progress {
		progress[pr.ID] = pr
	}
	nowMs := r.env.Clock.Now().UnixMilli()
	tickMs := r.cfg.TickInterval.Milliseconds()
	at := func(ago int64) int64 {
		if ago < 0 {
			return -1
		}
		return nowMs - ago*tickMs
	}
	state := func(id uint64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		rs.ReplicaID, rs.LogEndOffset, rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = int32(id), -1, -1, -1
		if pr, ok := progress[id]; ok {
			rs.LogEndOffset = int64(pr.Match)
			rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = at(pr.HeardTicksAgo), at(pr.CaughtUpTicksAgo)
		}
		return rs
	}
	for _, id := range voters {
		rp.CurrentVoters = append(rp.CurrentVoters, state(id))
	}
	for _, id := range learners {
		rp.Observers = append(rp.Observers, state(id))
	}
	return rp
}

// quorumNodes lists the members' Kafka addresses (v2), from the metadata,
// each once, in the order first named.
func (r *Reactor) quorumNodes(ids []uint64) []kmsg.DescribeQuorumResponseNode {
	var out []kmsg.DescribeQuorumResponseNode
	seen := map[uint64]bool{}
	for _, id := range ids {
		b, ok := r.ctl.state.Brokers[int32(id)]
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = b.ID
		l := kmsg.NewDescribeQuorumResponseNodeListener()
		l.Name, l.Host, l.Port = "PLAINTEXT", b.KafkaHost, uint16(b.KafkaPort)
		n.Listeners = append(n.Listeners, l)
		out = append(out, n)
	}
	return out
}
