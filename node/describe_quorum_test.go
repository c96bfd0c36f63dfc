package node

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeQuorumOf asks node id for one group's quorum (v2).
func describeQuorumOf(c *cluster, id int32, topic string, part int32) (*kmsg.DescribeQuorumResponse, kmsg.DescribeQuorumResponseTopicPartition) {
	c.t.Helper()
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = 2
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDescribeQuorumRequestTopicPartition()
	rp.Partition = part
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := c.request(id, req).(*kmsg.DescribeQuorumResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		c.t.Fatalf("DescribeQuorum %s/%d to %d: error %d, %d topics", topic, part, id, resp.ErrorCode, len(resp.Topics))
	}
	return resp, resp.Topics[0].Partitions[0]
}

// TestDescribeQuorumPartition: a partition's leader answers DescribeQuorum
// for it (leader, term, commit as high watermark, each member's
// acknowledged index and when the leader last heard from it and saw it
// caught up); its followers answer NOT_LEADER_OR_FOLLOWER, an unknown
// partition UNKNOWN_TOPIC_OR_PARTITION. A crashed member's timestamps
// stop while the live member's keep up (simulated time).
func TestDescribeQuorumPartition(t *testing.T) {
	c := newCluster(t, 3, 41)
	c.waitReady()
	createTopic(t, c, 1, "dq", 2, 3, nil)
	waitLeaders(t, c, "dq", 2)
	lead := leaderOf(c, "dq", 0)
	for i := range 3 {
		if sp := produce(c, lead, "dq", 0, -1, batchOf("v", "w")); sp.ErrorCode != 0 {
			t.Fatalf("produce %d: %v", i, kerr.ErrorForCode(sp.ErrorCode))
		}
	}
	c.runFor(200 * time.Millisecond) // the followers acknowledge the commit
	resp, p := describeQuorumOf(c, lead, "dq", 0)
	now := c.nodes[lead].r.env.Clock.Now().UnixMilli()
	st := c.nodes[lead].r.byName[topicPartition{"dq", 0}].Replica().Status()
	if p.ErrorCode != 0 || p.LeaderID != lead || p.LeaderEpoch != int32(st.Term) || p.HighWatermark != int64(st.Commit) || p.HighWatermark == 0 {
		t.Fatalf("leader %d term %d commit %d answered %+v", lead, st.Term, st.Commit, p)
	}
	if len(p.CurrentVoters) != 3 || len(p.Observers) != 0 || len(resp.Nodes) != 3 {
		t.Fatalf("want 3 voters, no observers, 3 nodes: %+v nodes %d", p, len(resp.Nodes))
	}
	for _, v := range p.CurrentVoters {
		if v.LogEndOffset != p.HighWatermark || v.LastFetchTimestamp <= 0 || v.LastFetchTimestamp > now ||
			v.LastCaughtUpTimestamp <= 0 || v.LastCaughtUpTimestamp > now || now-v.LastFetchTimestamp > 200 {
			t.Fatalf("member %d at now=%d: %+v", v.ReplicaID, now, v)
		}
	}

	// Followers and strangers.
	for id := range c.nodes {
		if id == lead {
			continue
		}
		if _, f := describeQuorumOf(c, id, "dq", 0); f.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("follower %d answered error %d, want NOT_LEADER_OR_FOLLOWER", id, f.ErrorCode)
		}
	}
	if _, u := describeQuorumOf(c, lead, "nosuch", 0); u.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic answered error %d", u.ErrorCode)
	}
	if _, u := describeQuorumOf(c, lead, "__cluster_metadata", 1); u.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("__cluster_metadata/1 answered error %d", u.ErrorCode)
	}

	// A follower crashes; records keep coming. Its LogEndOffset falls
	// behind and its timestamps stay where it left; the other's follow.
	var down, up int32
	for id := int32(1); id <= 3; id++ {
		switch {
		case id == lead:
		case down == 0:
			down = id
		default:
			up = id
		}
	}
	c.nodes[down].crash()
	c.runFor(2 * time.Second)
	if lead = leaderOf(c, "dq", 0); lead == 0 {
		t.Fatalf("no leader of dq/0 after crashing %d", down)
	}
	if sp := produce(c, lead, "dq", 0, -1, batchOf("x")); sp.ErrorCode != 0 {
		t.Fatalf("produce with %d down: %v", down, kerr.ErrorForCode(sp.ErrorCode))
	}
	c.runFor(100 * time.Millisecond)
	_, p = describeQuorumOf(c, lead, "dq", 0)
	now = c.nodes[lead].r.env.Clock.Now().UnixMilli()
	for _, v := range p.CurrentVoters {
		switch v.ReplicaID {
		case down:
			if v.LogEndOffset >= p.HighWatermark || now-v.LastCaughtUpTimestamp < 1500 {
				t.Fatalf("crashed member %d at now=%d hw=%d: %+v", down, now, p.HighWatermark, v)
			}
			if v.LastFetchTimestamp >= 0 && now-v.LastFetchTimestamp < 1500 {
				t.Fatalf("crashed member %d heard from recently at now=%d: %+v", down, now, v)
			}
		case up, lead:
			if v.LogEndOffset != p.HighWatermark || now-v.LastFetchTimestamp > 200 || now-v.LastCaughtUpTimestamp > 200 {
				t.Fatalf("live member %d at now=%d hw=%d: %+v", v.ReplicaID, now, p.HighWatermark, v)
			}
		}
	}
}
