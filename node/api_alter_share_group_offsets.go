package node

// AlterShareGroupOffsets (key 91), version 0 (KIP-932): sets the start
// offset (SPSO) of an empty share group's share-partitions. Each named
// partition's state is replaced by a fresh one starting at the given
// offset (nothing in flight, delivery counts gone), written through Raft
// to the group's coordinator partition (shares.go) before the answer.
//
// Errors: top level NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, and
// NON_EMPTY_GROUP while the group has members (nothing changes). Per
// partition: UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST for an offset
// below 0, and NOT_LEADER_OR_FOLLOWER when the write failed (unknown
// whether it took effect).
//
// Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED at the top
// level), READ on each topic (TOPIC_AUTHORIZATION_FAILED).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/group"
	"github.com/floe-broker/floe/node/share"
)

func serveAlterShareGroupOffsets(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	changeEmptyShareGroup(r, c, req, resp, shareAdmin{group: req.GroupID, op: kmsg.ACLOperationRead}, &resp.ErrorCode, alterShareOffsets, respond)
}

// alterShareOffsets starts each named share-partition afresh at its
// offset and answers it; it returns the records that make it so and the
// error codes of the partitions they are for.
func alterShareOffsets(r *Reactor, az *authz, sh *shareShard, req *kmsg.AlterShareGroupOffsetsRequest, resp *kmsg.AlterShareGroupOffsetsResponse) (recs []group.Record, pending []*int16) {
	cfg := r.cfg.Shares.withDefaults().partition()
	for _, rt := range req.Topics {
		t := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		t.Topic = rt.Topic
		ct := r.ctl.state.Topics[rt.Topic]
		if ct != nil {
			t.TopicID = ct.ID
		}
		for _, rp := range rt.Partitions {
			p := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			p.Partition = rp.Partition
			switch {
			case !az.topic(rt.Topic, kmsg.ACLOperationRead):
				p.ErrorCode = errTopicAuth.Code
			case ct == nil || ct.Internal || rp.Partition < 0 || int(rp.Partition) >= len(ct.Partitions):
				p.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rp.StartOffset < 0:
				p.ErrorCode = kerr.InvalidRequest.Code
			default:
				k := share.Key{Group: req.GroupID, Topic: rt.Topic, Partition: rp.Partition}
				sh.parts[k] = share.New(cfg, rp.StartOffset)
				recs = append(recs, group.Record{Key: share.EncodeKey(k), Value: share.EncodeState(sh.parts[k].State(r.monoNow()))})
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	// Taken once resp.Topics is complete, so the pointers stay valid.
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			if p := &resp.Topics[i].Partitions[j]; p.ErrorCode == 0 {
				pending = append(pending, &p.ErrorCode)
			}
		}
	}
	return recs, pending
}
