package node

// OffsetForLeaderEpoch (key 23), versions 0-4.
//
// Clients (KIP-320) ask, after a leader change, where the epoch they last
// read from ends, and truncate their position if it is past that. The
// partition's leader epoch is its Raft term, so the end offset of epoch E
// is the offset of the first entry of a later term, found by binary search
// over the log's terms; the current epoch ends at the log end. v2+ checks
// CurrentLeaderEpoch. Only the leader answers.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Authorization: DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED on its
// partitions); a broker's own request (ReplicaID >= 0) would need
// CLUSTER_ACTION, but Floe's brokers replicate through Raft and never send
// one.
func serveOffsetForLeaderEpoch(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	denied := deniedTopics(r.authorize(c, req), req.Topics, func(t kmsg.OffsetForLeaderEpochRequestTopic) string { return t.Topic }, kmsg.ACLOperationDescribe)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			p, ok := r.byName[topicPartition{rt.Topic, rp.Partition}]
			switch {
			case denied[rt.Topic]:
				sp.ErrorCode = errTopicAuth.Code
			case !ok:
				sp.ErrorCode = r.missingPartition(rt.Topic, rp.Partition).Code
			case req.Version >= 2 && checkLeaderEpoch(p, rp.CurrentLeaderEpoch) != nil:
				sp.ErrorCode = errCode(checkLeaderEpoch(p, rp.CurrentLeaderEpoch))
			case !p.Ready():
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				end, epoch := p.EpochEndOffset(rp.LeaderEpoch)
				// Never point past what consumers can see.
				if end > p.HighWatermark() {
					end = p.HighWatermark()
				}
				sp.EndOffset, sp.LeaderEpoch = end, epoch
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	respond(resp)
}
