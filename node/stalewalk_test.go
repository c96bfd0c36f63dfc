package node

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/floe-broker/floe/netx"
)

// A partition leader whose metadata is behind the controller's must not
// walk its group by it. Sim seed 2100210 (--all-faults): sim-0 settled at
// [2 4 5]; n2 restarted with metadata from before that move (replicas
// [1 2 3]), won sim-0's election and walked the group back to [1 2 3] (it
// added 1 and 3 and removed 4) while n1 and n3, whose metadata showed the
// move settled without them, deleted their replicas: voters [1 2 3 5] with
// 2 and 5 left, and sim-0 never had a leader again. Here broker x of mv
// ([1 2 3]) is cut off from the controller's leader, so its metadata stops;
// mv moves to [x z 4] (y, the third, deletes its replica); then x is made
// mv's leader. On the old code x added y back as a learner at once (and
// would have promoted it and removed 4); now it waits for a metadata
// barrier, which the controller's leader cannot answer while the cut lasts,
// and walks nothing; once healed its metadata shows the move settled and
// the group stays at [x z 4].
func TestStaleMetadataLeaderDoesNotWalkBack(t *testing.T) {
	c := newCluster(t, 4, 37)
	g := moveTopic(t, c)
	ctl := int32(c.nodes[1].r.controllerLeader())
	if ctl == 0 {
		t.Fatal("no controller leader")
	}
	x := int32(2)
	if ctl == x {
		x = 3
	}
	var y, z int32
	for _, id := range []int32{1, 2, 3} {
		if id == x {
			continue
		}
		if y == 0 {
			y = id
		} else {
			z = id
		}
	}
	target := []int32{x, z, 4}
	// mv's leader must not be x while it moves (x would not see the move).
	transferTo := func(to int32) {
		t.Helper()
		if !c.runUntil(10*time.Second, func() bool {
			lead := leaderOf(c, "mv", 0)
			if lead == to {
				return true
			}
			if lead != 0 {
				c.nodes[lead].r.parts[g].Replica().TransferLeader(uint64(to))
				c.nodes[lead].r.queueProcess()
			}
			return false
		}) {
			t.Fatalf("leadership of mv never moved to %d (leader %d)", to, leaderOf(c, "mv", 0))
		}
	}
	transferTo(z)
	c.net.Cut(netx.NodeID(x), netx.NodeID(ctl))
	c.net.Cut(netx.NodeID(ctl), netx.NodeID(x))
	reassign(t, c, z, "mv", 0, target)
	want := fmt.Sprint(target)
	if !c.runUntil(20*time.Second, func() bool {
		for id, n := range c.nodes {
			if id == x || n.r == nil {
				continue
			}
			tp, ok := n.r.Metadata().Topics["mv"]
			if !ok || tp.Partitions[0].Target != nil || fmt.Sprint(tp.Partitions[0].Replicas) != want || !tp.Partitions[0].Settled() {
				return false
			}
		}
		_, held := c.nodes[y].r.parts[g]
		return !held
	}) {
		t.Fatalf("the move to %v never settled: %+v", target, c.nodes[z].r.Metadata().Topics["mv"].Partitions[0])
	}
	if p := c.nodes[x].r.Metadata().Topics["mv"].Partitions[0]; fmt.Sprint(p.Replicas) == want {
		t.Fatalf("broker %d's metadata saw the move although cut off from the controller's leader %d", x, ctl)
	}
	transferTo(x)
	bad := ""
	c.stepUntil(3*time.Second, func() bool {
		voters, learners, ok := c.leaderConf(g)
		if ok && (len(learners) > 0 || !sameIDs(voters, target)) {
			bad = fmt.Sprintf("voters %v learners %v", voters, learners)
			return true
		}
		return false
	})
	if bad != "" {
		t.Fatalf("leader %d, its metadata behind the move to %v, walked the group back: %s", x, target, bad)
	}
	c.net.Heal()
	if !c.runUntil(10*time.Second, func() bool { return c.settled("mv", want) }) {
		t.Fatalf("broker %d's metadata never caught up after the heal", x)
	}
	c.runFor(2 * time.Second)
	voters, learners, ok := c.leaderConf(g)
	if !ok || len(learners) > 0 || !sameIDs(voters, target) || slices.Contains(voters, uint64(y)) {
		t.Fatalf("after the heal: leader %v, voters %v learners %v, want %v", ok, voters, learners, target)
	}
}
