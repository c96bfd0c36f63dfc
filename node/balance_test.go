package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/node/controller"
)

// counts returns replicas and preferred leaderships per broker over every
// topic in node id's metadata, and whether every partition is settled.
func (c *cluster) balanceCounts(id int32) (replicas, leaders map[int32]int, settled bool) {
	st := c.nodes[id].r.Metadata()
	replicas, leaders, settled = map[int32]int{}, map[int32]int{}, true
	for _, name := range st.TopicNames() {
		for _, p := range st.Topics[name].Partitions {
			settled = settled && p.Settled()
			for _, b := range p.Replicas {
				replicas[b]++
			}
			leaders[p.Replicas[0]]++
		}
	}
	return replicas, leaders, settled
}

func spreadOf(count map[int32]int, brokers int32) (lo, hi int) {
	lo, hi = count[1], count[1]
	for id := int32(2); id <= brokers; id++ {
		lo, hi = min(lo, count[id]), max(hi, count[id])
	}
	return lo, hi
}

// TestBalancerJoinTakesShare is the scale-out case in the
// in-process cluster: 3 brokers carry 12 partitions at RF=3, a 4th joins,
// and without any operator command the balancer moves replicas and then
// preferred leaders onto it, never more than its bound in flight, until
// every broker holds its share (within one) and leads its share of the
// workload topic; the moved replicas hold the data.
func TestBalancerJoinTakesShare(t *testing.T) {
	const movesMax = 2
	c := newClusterWith(t, 3, 23, func(cfg *Config) {
		cfg.Balancer, cfg.BalancerMovesMax = controller.BalanceCount, movesMax
	})
	c.waitReady()
	createTopic(t, c, 1, "b", 12, 3, nil)
	waitLeaders(t, c, "b", 12)
	for p := int32(0); p < 12; p++ {
		if sp := produce(c, leaderOf(c, "b", p), "b", p, -1, batchOf(fmt.Sprint("v", p))); sp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
		}
	}
	if _, _, settled := c.balanceCounts(1); !settled {
		t.Fatal("moves before any broker joined")
	}
	c.addNode(4)
	c.waitReady()
	worst := 0
	balanced := func() bool {
		for _, n := range c.nodes {
			worst = max(worst, n.r.Metadata().BalancerMovesInFlight())
		}
		replicas, leaders, settled := c.balanceCounts(4)
		rlo, rhi := spreadOf(replicas, 4)
		llo, lhi := spreadOf(leaders, 4)
		if !settled || rhi-rlo > 1 || lhi-llo > 2 {
			return false
		}
		// The preferred leaders of the workload topic lead it.
		for _, p := range c.nodes[4].r.Metadata().Topics["b"].Partitions {
			if leaderOf(c, "b", p.Index) != p.Replicas[0] {
				return false
			}
		}
		return true
	}
	if !c.runUntil(120*time.Second, balanced) {
		replicas, leaders, settled := c.balanceCounts(4)
		t.Fatalf("not balanced within 120s simulated: replicas %v preferred leaders %v settled %v", replicas, leaders, settled)
	}
	if worst > movesMax {
		t.Fatalf("%d balancer moves in flight at once, bound %d", worst, movesMax)
	}
	replicas, leaders, _ := c.balanceCounts(4)
	if replicas[4] == 0 || leaders[4] == 0 {
		t.Fatalf("the new broker took nothing: replicas %v leaders %v", replicas, leaders)
	}
	var moves, leaderMoves uint64
	for _, n := range c.nodes {
		s := n.r.BalancerStats()
		moves, leaderMoves = moves+s.Moves, leaderMoves+s.LeaderMoves
	}
	if moves == 0 {
		t.Fatalf("balanced without a counted move (leader moves %d)", leaderMoves)
	}
	for _, p := range c.nodes[4].r.Metadata().Topics["b"].Partitions {
		if lp := c.nodes[4].r.byName[topicPartition{"b", p.Index}]; lp != nil && lp.HighWatermark() != 1 {
			t.Fatalf("b/%d on the new broker: high watermark %d, want 1", p.Index, lp.HighWatermark())
		}
	}
	// At rest: no further move for a while.
	before := moves + leaderMoves
	c.runFor(10 * time.Second)
	var after uint64
	for _, n := range c.nodes {
		s := n.r.BalancerStats()
		after += s.Moves + s.LeaderMoves
	}
	if after != before {
		t.Fatalf("balanced cluster kept moving: %d moves, then %d", before, after)
	}
}
