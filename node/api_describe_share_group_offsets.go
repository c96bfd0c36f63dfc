package node

// DescribeShareGroupOffsets (key 90), versions 0-1 (KIP-932; v1's Lag is
// KIP-1226): each share group's start offset (SPSO) per share-partition,
// from the group's coordinator (shares.go). Topics null asks for every
// share-partition the group has state for. A partition the group never
// fetched has start offset -1. LeaderEpoch is -1 (Floe keeps no epoch with
// share state). Lag (v1) is the records not yet finished: the replica's
// high watermark, less the start offset, less the in-flight records
// already acknowledged or archived; -1 when this broker holds no replica.
//
// Group errors: NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS (the group
// is served elsewhere or loading), GROUP_ID_NOT_FOUND (no share group nor
// share state of that name here).
//
// Authorization: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED),
// DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED on its partitions).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/share"
)

func serveDescribeShareGroupOffsets(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	az := r.authorize(c, req)
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		if !az.group(rg.GroupID, kmsg.ACLOperationDescribe) {
			g.ErrorCode = errGroupAuth.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		sh, err := r.shareShardFor(rg.GroupID)
		if err != nil {
			g.ErrorCode = err.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if !sh.hasShareGroup(rg.GroupID) {
			g.ErrorCode = kerr.GroupIDNotFound.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		topics := rg.Topics
		if topics == nil {
			topics = sh.shareTopics(rg.GroupID)
		}
		for _, rt := range topics {
			g.Topics = append(g.Topics, r.describeShareTopic(sh, az, rg.GroupID, rt))
		}
		resp.Groups = append(resp.Groups, g)
	}
	respond(resp)
}

// describeShareTopic answers one topic of a DescribeShareGroupOffsets.
func (r *Reactor) describeShareTopic(sh *shareShard, az *authz, groupName string, rt kmsg.DescribeShareGroupOffsetsRequestGroupTopic) kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	t := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
	t.Topic = rt.Topic
	ct := r.ctl.state.Topics[rt.Topic]
	if ct != nil {
		t.TopicID = ct.ID
	}
	for _, part := range rt.Partitions {
		p := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
		p.Partition, p.StartOffset, p.LeaderEpoch, p.Lag = part, -1, -1, -1
		switch {
		case !az.topic(rt.Topic, kmsg.ACLOperationDescribe):
			p.ErrorCode = errTopicAuth.Code
		case ct == nil || part < 0 || int(part) >= len(ct.Partitions):
			p.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			if sp := sh.parts[share.Key{Group: groupName, Topic: rt.Topic, Partition: part}]; sp != nil {
				p.StartOffset = sp.Start()
				if dp, ok := r.byName[topicPartition{rt.Topic, part}]; ok {
					p.Lag = shareLag(sp, dp.HighWatermark())
				}
			}
		}
		t.Partitions = append(t.Partitions, p)
	}
	return t
}

// shareLag is the records of a share-partition not yet finished below hw.
func shareLag(sp *share.Partition, hw int64) int64 {
	lag := hw - sp.Start()
	for _, rec := range sp.InFlight() {
		if rec.Offset < hw && (rec.State == share.Acknowledged || rec.State == share.Archived) {
			lag--
		}
	}
	return max(lag, 0)
}
