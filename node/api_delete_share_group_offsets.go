package node

// DeleteShareGroupOffsets (key 92), version 0 (KIP-932): forgets an empty
// share group's state on whole topics: every share-partition of the topic
// is deleted (a tombstone per key, written through Raft before the
// answer), so the group's next fetch starts it again per
// share.auto.offset.reset.
//
// Errors: top level NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS,
// GROUP_ID_NOT_FOUND (no share group nor share state of that name), and
// NON_EMPTY_GROUP while the group has members (nothing changes). Per
// topic: UNKNOWN_TOPIC_OR_PARTITION, and NOT_LEADER_OR_FOLLOWER when the
// write failed (unknown whether it took effect).
//
// Authorization: DELETE on the group (GROUP_AUTHORIZATION_FAILED at the
// top level), READ on each topic (TOPIC_AUTHORIZATION_FAILED).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/group"
	"github.com/floe-broker/floe/node/share"
)

func serveDeleteShareGroupOffsets(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	changeEmptyShareGroup(r, c, req, resp, shareAdmin{group: req.GroupID, op: kmsg.ACLOperationDelete, mustExist: true}, &resp.ErrorCode, deleteShareOffsets, respond)
}

// deleteShareOffsets forgets the group's share-partitions of each named
// topic and answers the topic; it returns the tombstones that make it so
// and the error codes of the topics they are for (every topic answered
// without an error, whether or not the group had state on it).
func deleteShareOffsets(r *Reactor, az *authz, sh *shareShard, req *kmsg.DeleteShareGroupOffsetsRequest, resp *kmsg.DeleteShareGroupOffsetsResponse) (recs []group.Record, pending []*int16) {
	for _, rt := range req.Topics {
		t := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		t.Topic = rt.Topic
		ct := r.ctl.state.Topics[rt.Topic]
		switch {
		case !az.topic(rt.Topic, kmsg.ACLOperationRead):
			t.ErrorCode = errTopicAuth.Code
		case ct == nil:
			t.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			t.TopicID = ct.ID
			for _, k := range sortedShareKeys(sh.parts) {
				if k.Group == req.GroupID && k.Topic == rt.Topic {
					delete(sh.parts, k)
					recs = append(recs, group.Record{Key: share.EncodeKey(k)})
				}
			}
		}
		resp.Topics = append(resp.Topics, t)
	}
	for i := range resp.Topics {
		if t := &resp.Topics[i]; t.ErrorCode == 0 {
			pending = append(pending, &t.ErrorCode)
		}
	}
	return recs, pending
}
