package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestClusterReplicatesAndFailsOver(t *testing.T) {
	c := newCluster(t, 3, 11)
	c.waitReady()
	createTopic(t, c, 2, "r3", 1, 3, nil)
	waitLeaders(t, c, "r3", 1)
	lead := leaderOf(c, "r3", 0)
	var acked []string
	for i := 0; i < 10; i++ {
		v := fmt.Sprintf("before-%d", i)
		if sp := produce(c, lead, "r3", 0, -1, batchOf(v)); sp.ErrorCode != 0 {
			t.Fatalf("produce %d: %v", i, kerr.ErrorForCode(sp.ErrorCode))
		}
		acked = append(acked, v)
	}
	// Every replica has the data, not only the leader.
	c.runFor(200 * time.Millisecond)
	for id, n := range c.nodes {
		p := n.r.byName[topicPartition{"r3", 0}]
		if p == nil || p.HighWatermark() != 10 {
			t.Fatalf("node %d: partition %v hw %d", id, p != nil, p.HighWatermark())
		}
	}
	c.nodes[lead].crash()
	start := c.clk.Monotonic()
	var newLead int32
	if !c.runUntil(10*time.Second, func() bool { newLead = leaderOf(c, "r3", 0); return newLead != 0 && newLead != lead }) {
		t.Fatalf("no new leader after crashing %d", lead)
	}
	t.Logf("failover from %d to %d in %v simulated", lead, newLead, c.clk.Monotonic()-start)
	for i := 0; i < 10; i++ {
		v := fmt.Sprintf("after-%d", i)
		if sp := produce(c, newLead, "r3", 0, -1, batchOf(v)); sp.ErrorCode != 0 {
			t.Fatalf("produce after failover %d: %v", i, kerr.ErrorForCode(sp.ErrorCode))
		}
		acked = append(acked, v)
	}
	got, _ := fetchAll(t, c, newLead, "r3", 0)
	if fmt.Sprint(got) != fmt.Sprint(acked) {
		t.Fatalf("read %v\nwant %v", got, acked)
	}
	// The crashed broker comes back and catches up as a follower.
	c.nodes[lead].boot()
	if !c.runUntil(10*time.Second, func() bool {
		p := c.nodes[lead].r.byName[topicPartition{"r3", 0}]
		return p != nil && p.HighWatermark() == 20 && !p.IsLeader()
	}) {
		t.Fatalf("restarted node %d did not catch up", lead)
	}
}

func TestClusterMinorityCannotCommit(t *testing.T) {
	c := newCluster(t, 3, 12)
	c.waitReady()
	createTopic(t, c, 1, "m", 1, 3, nil)
	waitLeaders(t, c, "m", 1)
	lead := leaderOf(c, "m", 0)
	for id := range c.nodes {
		if id != lead {
			c.nodes[id].crash()
		}
	}
	sp := produce(c, lead, "m", 0, -1, batchOf("lonely"))
	if sp.ErrorCode == 0 {
		t.Fatalf("acks=all write acknowledged by a leader without a quorum")
	}
	t.Logf("minority produce answered %v", kerr.ErrorForCode(sp.ErrorCode))
}
