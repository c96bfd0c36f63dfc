package node

// WriteTxnMarkers (key 27), versions 0-1.
//
// Writes transaction markers to partitions this broker leads, each through
// the partition's Raft group, answered once committed (a partition of
// __consumer_offsets also completes the group coordinator's pending
// transactional offsets). Floe's own coordinators do not send this request:
// they use the same local path, or a node RPC to the partition's leader
// (txns.go); it is served for tools and for parity with Kafka. A partition
// led elsewhere gets NOT_LEADER_OR_FOLLOWER.
//
// Authorization: CLUSTER_ACTION on the cluster
// (CLUSTER_AUTHORIZATION_FAILED on every partition).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
)

func serveWriteTxnMarkers(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	allowed := r.authorize(c, req).sees(kmsg.ACLResourceTypeCluster, acl.ClusterName, kmsg.ACLOperationClusterAction)
	remaining := 1
	finish := func() {
		if remaining--; remaining == 0 {
			respond(resp)
		}
	}
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	for mi, m := range req.Markers {
		for ti, t := range m.Topics {
			for pi, part := range t.Partitions {
				rp := &resp.Markers[mi].Topics[ti].Partitions[pi]
				if !allowed {
					rp.ErrorCode = errClusterAuth.Code
					continue
				}
				p, ok := r.byName[topicPartition{t.Topic, part}]
				if !ok || !p.IsLeader() {
					rp.ErrorCode = kerr.NotLeaderForPartition.Code
					continue
				}
				remaining++
				r.appendMarker(p, m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, func(err error) {
					rp.ErrorCode = errCode(err)
					finish()
				})
			}
		}
	}
	finish()
}
