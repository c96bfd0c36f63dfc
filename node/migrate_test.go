package node

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupMigrationFailover: on a 3-broker cluster, a classic group's
// member consumes and commits; a KIP-848 member joins (online upgrade);
// the coordinator's broker dies; the next coordinator loads the consumer
// group with its classic member (its heartbeat is told to rejoin, not
// UNKNOWN_MEMBER_ID), the consumer member's epoch, and the offsets; the
// classic member rejoins and both own disjoint partitions; the consumer
// member leaves and the group is classic again, offsets kept.
func TestGroupMigrationFailover(t *testing.T) {
	c := newCluster(t, 3, 41)
	c.waitReady()
	createTopic(t, c, 1, "t", 2, 3, nil)
	waitLeaders(t, c, "t", 2)
	const g = "mig"
	co := findCoordinator(t, c, 1, g)

	md := func(owned ...int32) []byte {
		m := kmsg.NewConsumerMemberMetadata()
		m.Version = 1
		m.Topics = []string{"t"}
		if len(owned) > 0 {
			m.OwnedPartitions = []kmsg.ConsumerMemberMetadataOwnedPartition{{Topic: "t", Partitions: owned}}
		}
		return m.AppendTo(nil)
	}
	memberID := ""
	var owned []int32
	join := func() *kmsg.JoinGroupResponse {
		var resp kmsg.Response
		for i := 0; i < 2; i++ {
			resp, co = groupCall(t, c, co, g, func() kmsg.Request {
				req := kmsg.NewPtrJoinGroupRequest()
				req.Version = 9
				req.Group, req.MemberID, req.ProtocolType = g, memberID, "consumer"
				req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
				req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "cooperative-sticky", Metadata: md(owned...)}}
				return req
			}, func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode })
			jr := resp.(*kmsg.JoinGroupResponse)
			if jr.ErrorCode != kerr.MemberIDRequired.Code {
				return jr
			}
			memberID = jr.MemberID
		}
		t.Fatal("MEMBER_ID_REQUIRED twice")
		return nil
	}
	sync := func(gen int32, assign []int32) []int32 {
		resp, _ := groupCall(t, c, co, g, func() kmsg.Request {
			req := kmsg.NewPtrSyncGroupRequest()
			req.Version = 5
			req.Group, req.MemberID, req.Generation = g, memberID, gen
			if assign != nil {
				a := kmsg.NewConsumerMemberAssignment()
				a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: assign}}
				req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: memberID, MemberAssignment: a.AppendTo(nil)}}
			}
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.SyncGroupResponse).ErrorCode })
		sr := resp.(*kmsg.SyncGroupResponse)
		if sr.ErrorCode != 0 {
			t.Fatalf("sync: %v", kerr.ErrorForCode(sr.ErrorCode))
		}
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(sr.MemberAssignment); err != nil {
			t.Fatalf("assignment: %v", err)
		}
		var out []int32
		for _, tp := range a.Topics {
			out = append(out, tp.Partitions...)
		}
		return out
	}
	heartbeat := func(gen int32) int16 {
		resp, _ := groupCall(t, c, co, g, func() kmsg.Request {
			req := kmsg.NewPtrHeartbeatRequest()
			req.Version = 4
			req.Group, req.MemberID, req.Generation = g, memberID, gen
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.HeartbeatResponse).ErrorCode })
		return resp.(*kmsg.HeartbeatResponse).ErrorCode
	}

	// the classic group: one member owns both partitions, commits
	jr := join()
	if jr.ErrorCode != 0 || jr.LeaderID != memberID {
		t.Fatalf("classic join: %v leader %q", kerr.ErrorForCode(jr.ErrorCode), jr.LeaderID)
	}
	gen := jr.Generation
	owned = sync(gen, []int32{0, 1})
	for p := int32(0); p < 2; p++ {
		resp, _ := groupCall(t, c, co, g, commitReq(g, memberID, gen, "t", p, 10+int64(p)), commitRespCode)
		if code := commitRespCode(resp); code != 0 {
			t.Fatalf("classic commit: %v", kerr.ErrorForCode(code))
		}
	}

	// a KIP-848 member joins: the group is upgraded
	cgCode := func(r kmsg.Response) int16 { return r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode }
	resp, co2 := groupCall(t, c, co, g, func() kmsg.Request { return consumerHeartbeatReq(g, "k", 0, "t") }, cgCode)
	co = co2
	hr := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
	if hr.ErrorCode != 0 || hr.MemberEpoch <= gen {
		t.Fatalf("consumer join of the classic group: %v epoch %d", kerr.ErrorForCode(hr.ErrorCode), hr.MemberEpoch)
	}
	if hr.Assignment != nil && len(hr.Assignment.Topics) > 0 && len(hr.Assignment.Topics[0].Partitions) > 0 {
		t.Fatalf("k was given %v while the classic member owns both", hr.Assignment.Topics)
	}
	kEpoch := hr.MemberEpoch

	// the coordinator dies: the next one loads the migrated group
	c.nodes[co].crash()
	ask := int32(1)
	if co == 1 {
		ask = 2
	}
	dead := co
	if !c.runUntil(60*time.Second, func() bool {
		co = findCoordinator(t, c, ask, g)
		if co == dead {
			c.runFor(100 * time.Millisecond)
		}
		return co != dead
	}) {
		t.Fatal("the coordinator did not move off the dead broker")
	}
	if code := heartbeat(gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("classic heartbeat after failover: %v, want REBALANCE_IN_PROGRESS", kerr.ErrorForCode(code))
	}
	resp, _ = groupCall(t, c, co, g, fetchReq(g, "t", 1), fetchRespCode)
	if off := fetchedOffset(resp); off != 11 {
		t.Fatalf("offset after the upgrade and a failover: %d, want 11", off)
	}
	// the classic member rejoins until stable; k takes what it gives up
	var kOwned []int32
	kBeat := func() {
		resp, _ := groupCall(t, c, co, g, func() kmsg.Request {
			req := consumerHeartbeatReq(g, "k", kEpoch)
			req.SubscribedTopicNames = nil
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			if len(kOwned) > 0 {
				req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: topicIDOf(t, c, co, "t"), Partitions: kOwned})
			}
			return req
		}, cgCode)
		hr := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
		if hr.ErrorCode != 0 {
			t.Fatalf("k heartbeat: %v", kerr.ErrorForCode(hr.ErrorCode))
		}
		kEpoch = hr.MemberEpoch
		if hr.Assignment != nil {
			kOwned = nil
			for _, tp := range hr.Assignment.Topics {
				kOwned = append(kOwned, tp.Partitions...)
			}
		}
	}
	for i := 0; i < 10 && (len(owned) != 1 || len(kOwned) != 1); i++ {
		if heartbeat(gen) != 0 {
			jr := join()
			if jr.ErrorCode != 0 || jr.LeaderID != "" {
				t.Fatalf("classic rejoin in the consumer group: %v leader %q", kerr.ErrorForCode(jr.ErrorCode), jr.LeaderID)
			}
			gen = jr.Generation
			owned = sync(gen, nil)
		}
		kBeat()
		for _, p := range owned {
			for _, q := range kOwned {
				if p == q {
					t.Fatalf("partition %d owned by the classic member and k", p)
				}
			}
		}
		c.runFor(500 * time.Millisecond)
	}
	if len(owned) != 1 || len(kOwned) != 1 {
		t.Fatalf("not settled: classic %v, k %v", owned, kOwned)
	}

	// k leaves: the group is classic again
	resp, _ = groupCall(t, c, co, g, func() kmsg.Request { return consumerHeartbeatReq(g, "k", -1) }, cgCode)
	if code := cgCode(resp); code != 0 {
		t.Fatalf("k leaves: %v", kerr.ErrorForCode(code))
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{g}
	d := c.request(co, dg).(*kmsg.DescribeGroupsResponse).Groups[0]
	if d.ErrorCode != 0 || d.State != "PreparingRebalance" || len(d.Members) != 1 {
		t.Fatalf("after the downgrade: %v %s %d members", kerr.ErrorForCode(d.ErrorCode), d.State, len(d.Members))
	}
	jr = join()
	if jr.ErrorCode != 0 || jr.LeaderID != memberID {
		t.Fatalf("classic rejoin after the downgrade: %v leader %q", kerr.ErrorForCode(jr.ErrorCode), jr.LeaderID)
	}
	owned = sync(jr.Generation, []int32{0, 1})
	resp, _ = groupCall(t, c, co, g, fetchReq(g, "t", 0), fetchRespCode)
	if off := fetchedOffset(resp); off != 10 || len(owned) != 2 {
		t.Fatalf("after the downgrade: offset %d (want 10), owned %v", off, owned)
	}
}

// topicIDOf returns a topic's id as node id's metadata knows it.
func topicIDOf(t *testing.T, c *cluster, id int32, topic string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
	for _, mt := range c.request(id, req).(*kmsg.MetadataResponse).Topics {
		if mt.Topic != nil && *mt.Topic == topic {
			return mt.TopicID
		}
	}
	t.Fatalf("no topic %s", topic)
	return [16]byte{}
}
