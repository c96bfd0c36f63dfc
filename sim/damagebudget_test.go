package sim

import (
	"testing"

	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/sim/world"
)

// TestDamageBudgetIsAMinorityOfTheReplicationFactor: the damage budget of
// a partition's group (nemesis.groupSize) is a minority of its replication
// factor, not of the brokers holding its directory, for every topic's
// partitions, not only the workload topic's. Seed 1700474 --all-faults:
// after a cancelled balancer move and a decommission's,
// __consumer_offsets-0's directory was on all five brokers, so a lying
// fsync's loss on n3 and n5's disk replacement (two of five) passed the
// budget, but were two of the group's four voters [2 3 4 5] mid-walk: it
// never elected again, and the run's consumer and balancer never finished.
func TestDamageBudgetIsAMinorityOfTheReplicationFactor(t *testing.T) {
	w := world.New(world.Config{Seed: 1, Nodes: 5}, func(world.Env) world.Instance { return fatalStub{} })
	r := &run{w: w, o: Options{Nodes: 5}, topic: "sim"}
	n := &nemesis{r: r, w: w, damagedDirs: map[string]map[netx.NodeID]bool{}, corrupted: map[netx.NodeID]bool{},
		replaced: map[netx.NodeID]bool{}, shrunk: map[int32]bool{}}
	m := &moreFaults{n: n}
	offsets := "data/partitions/__consumer_offsets-0-20"
	onTwo := "data/partitions/skew-1-18"
	for _, id := range w.IDs() {
		for _, dir := range []string{offsets, "data/partitions/sim-0-16", "data/controller"} {
			if err := w.FS(id).MkdirAll(dir); err != nil {
				t.Fatal(err)
			}
		}
		if id <= 2 {
			if err := w.FS(id).MkdirAll(onTwo); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		dir  string
		want int
	}{
		{offsets, 3}, {"data/partitions/sim-0-16", 3}, {onTwo, 2}, {"data/controller", 5},
	} {
		if got := n.groupSize(tc.dir); got != tc.want {
			t.Errorf("groupSize(%s) = %d on five brokers, want %d", tc.dir, got, tc.want)
		}
	}
	n.shrunk[0] = true
	if got := n.groupSize("data/partitions/sim-0-16"); got != 2 {
		t.Errorf("groupSize of the workload partition shrunk to two = %d, want 2", got)
	}

	// The seed's order: a lie's loss on n3, then another copy's loss.
	seg := offsets + "/00000000000000000001-0000000000.log"
	if !m.lieMayLose(3, seg) {
		t.Fatalf("a first loss of __consumer_offsets-0's copy (n3) was refused")
	}
	if m.lieMayLose(5, seg) {
		t.Errorf("a second loss of __consumer_offsets-0's copy (n5) was allowed: two of a 3-replica group")
	}
	if got, budget := n.damageOf(offsets, 5)+1, (n.groupSize(offsets)-1)/2; got <= budget {
		t.Errorf("replacing n5's disk would damage %d copies of __consumer_offsets-0, within its budget %d", got, budget)
	}
}
