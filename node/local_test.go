package node

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/node/controller"
)

// fencesInForce returns the vote fences r holds, by group.
func fencesInForce(r *Reactor) map[uint64]consensus.VoteFence {
	fs := map[uint64]consensus.VoteFence{}
	for g, s := range r.local { //floe:unordered building a map
		if !s.fence.IsZero() {
			fs[g] = s.fence
		}
	}
	return fs
}

// A deleted partition leaves no reactor state behind on any broker: its
// read lease, first-campaign and open records go with the replica
// (reapDoomed used to delete the replica and its index entries but keep
// the lease, its term and probe, the unrepairable flag, growing with every
// topic ever deleted).
func TestDeletedPartitionLeavesNoState(t *testing.T) {
	c := newCluster(t, 3, 61)
	c.waitReady()
	createTopic(t, c, 1, "brief", 2, 3, nil)
	waitLeaders(t, c, "brief", 2)
	var groups []uint64
	for p := int32(0); p < 2; p++ {
		lead := leaderOf(c, "brief", p)
		if sp := produce(c, lead, "brief", p, -1, batchOf("x")); sp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
		}
		lp := c.nodes[lead].r.byName[topicPartition{"brief", p}]
		if !c.nodes[lead].r.leaseHeld(lp) {
			t.Fatalf("partition %d: leader %d holds no read lease after a produce", p, lead)
		}
		groups = append(groups, uint64(lp.Replica().Group))
	}
	resp := admin(t, c, 1, deleteTopicsReq(5, "brief")).(*kmsg.DeleteTopicsResponse)
	wantCode(t, "delete brief", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, nil)
	gone := func() bool {
		for _, n := range c.nodes {
			for _, g := range groups {
				if _, open := n.r.parts[g]; open {
					return false
				}
			}
		}
		return true
	}
	if !c.runUntil(10*time.Second, gone) {
		t.Fatalf("replicas of a deleted topic still open")
	}
	for id, n := range c.nodes {
		for _, g := range groups {
			if s, ok := n.r.local[g]; ok {
				t.Errorf("node %d: deleted group %d left its state behind: %+v", id, g, *s)
			}
		}
		if len(n.r.byName) != len(n.r.parts) {
			t.Errorf("node %d: %d names for %d partitions", id, len(n.r.byName), len(n.r.parts))
		}
		for g := range n.r.local { //floe:unordered checking each
			if _, open := n.r.parts[g]; !open && g != controller.ControllerGroup {
				t.Errorf("node %d: state of group %d, which is not here", id, g)
			}
		}
	}
}
