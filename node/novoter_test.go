package node

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/floe-broker/floe/netx"
)

// TestReplacedDiskMovedReplicaProbesReplicas: a partition moved onto
// broker 4 ([1 2 3] -> [1 2 4]); 4's disk is replaced. Its replica opens
// empty (4 is not an initial voter: no bootstrap entries) under the
// lost-log fence, with no membership in its log. Until h-novoter its term
// probe knew no voters, asked nobody and ended at once, so a stale leader
// reaching it first could commit over a later term's entry with its
// acknowledgement (consensus TestLostLogProbeWithoutVotersInLog). The node
// now hands it the partition's replicas as the voters to ask.
func TestReplacedDiskMovedReplicaProbesReplicas(t *testing.T) {
	c := newCluster(t, 4, 73)
	c.waitReady()
	createOnReplicas(t, c, 1, "mv", []int32{1, 2, 3})
	reassign(t, c, 1, "mv", 0, []int32{1, 2, 4})
	done := func() bool {
		p := c.nodes[1].r.Metadata().Topics["mv"].Partitions[0]
		return p.Target == nil && fmt.Sprint(p.Replicas) == "[1 2 4]"
	}
	if !c.runUntil(30*time.Second, done) {
		t.Fatalf("reassignment did not finish: %+v", c.nodes[1].r.Metadata().Topics["mv"].Partitions[0])
	}
	g := uint64(c.nodes[1].r.byName[topicPartition{"mv", 0}].Replica().Group)
	if !c.runUntil(10*time.Second, func() bool { _, ok := c.nodes[4].r.parts[g]; return ok }) {
		t.Fatal("broker 4 holds no replica of mv-0 after the move")
	}

	c.w.ReplaceDisk(netx.NodeID(4))
	n4 := c.nodes[4]
	var voters []uint64
	var fenced bool
	var last uint64
	opened := c.runUntil(30*time.Second, func() bool {
		p, ok := n4.r.parts[g]
		if !ok {
			return false
		}
		rep := p.Replica()
		voters, fenced, last = rep.TermProbeVoters(), rep.VoteFence().IsLostLog(), rep.LastIndex()
		return true
	})
	if !opened {
		t.Fatal("broker 4 did not open its replica of mv-0 on the new disk")
	}
	if !fenced || last != 0 {
		t.Fatalf("setup: broker 4's replica opened with fence lost-log %v, last index %d; want fenced and empty", fenced, last)
	}
	if !slices.Equal(voters, []uint64{1, 2, 4}) {
		t.Fatalf("broker 4's empty lost-log replica probes %v, want the partition's replicas [1 2 4]", voters)
	}
}
