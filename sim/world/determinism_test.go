package world

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/netx"
)

// counterRun is what one scenario run leaves behind.
type counterRun struct {
	hash  string
	trace []string
}

// runCounterScenario runs three counter nodes through a fault phase (loss,
// duplication, reordering, a partition, a crash and restart, a pause) and a
// liveness phase (faults off), checking the counter's promises as it goes.
// Which nodes the faults hit and when is drawn from the world's seed.
func runCounterScenario(t *testing.T, seed int64) counterRun {
	t.Helper()
	const nodes = 3
	ids := []netx.NodeID{1, 2, 3}
	lastSynced := map[netx.NodeID]uint64{}
	w := New(Config{
		Seed:  seed,
		Nodes: nodes,
		Faults: netx.LinkFaults{
			DropProb: 0.1, DupProb: 0.1, ReorderProb: 0.1,
			DelayMin: 100 * time.Microsecond, DelayMax: 3 * time.Millisecond,
		},
	}, func(env Env) Instance {
		return newCounterNode(env, ids, func(id netx.NodeID, v uint64) { lastSynced[id] = v })
	})
	counter := func(id netx.NodeID) *counterNode {
		n, _ := w.Instance(id).(*counterNode)
		if n == nil {
			t.Fatalf("n%d has no counter instance", id)
		}
		return n
	}
	pick := func() netx.NodeID { return ids[w.Rand().Intn(nodes)] }
	phase := func(minDur time.Duration) { w.RunFor(minDur + time.Duration(w.Rand().Int63n(int64(minDur)))) }

	phase(200 * time.Millisecond)

	lone := pick()
	var rest []netx.NodeID
	for _, id := range ids {
		if id != lone {
			rest = append(rest, id)
		}
	}
	w.Partition([]netx.NodeID{lone}, rest)
	phase(200 * time.Millisecond)
	w.Heal()

	crashed := pick()
	phase(50 * time.Millisecond)
	synced := lastSynced[crashed]
	if synced == 0 {
		t.Fatalf("n%d synced nothing before its crash: the check below would be vacuous", crashed)
	}
	w.Crash(crashed)
	phase(100 * time.Millisecond)
	w.Restart(crashed)
	if got := counter(crashed).own; got < synced {
		t.Errorf("n%d recovered counter %d after restart, below its last synced value %d", crashed, got, synced)
	}

	paused := pick()
	w.Pause(paused)
	phase(100 * time.Millisecond)
	ownBefore := counter(paused).own
	w.Resume(paused)
	w.RunFor(time.Millisecond)
	if counter(paused).own <= ownBefore {
		t.Errorf("n%d did not tick after resume (own stays %d)", paused, ownBefore)
	}

	// Liveness: faults off; every node must hear of the largest counter.
	stats := w.Net().Stats()
	if stats.Dropped == 0 || stats.Duplicated == 0 {
		t.Errorf("the fault phase injected too little: %+v", stats)
	}
	w.SetFaults(netx.LinkFaults{DelayMin: 100 * time.Microsecond, DelayMax: time.Millisecond})
	var target uint64
	for _, id := range ids {
		target = max(target, counter(id).own)
	}
	converged := w.RunUntil(func() bool {
		for _, id := range ids {
			if counter(id).seen < target {
				return false
			}
		}
		return true
	}, time.Second)
	if !converged {
		for _, id := range ids {
			t.Logf("n%d own=%d seen=%d", id, counter(id).own, counter(id).seen)
		}
		t.Errorf("gossip did not converge on %d within 1s of healing", target)
	}
	return counterRun{hash: w.TraceHash(), trace: w.Trace()}
}

// The Done-when: the same seed run twice gives the same trace, byte
// for byte, and the run really went through every fault.
func TestSameSeedSameTrace(t *testing.T) {
	forEachSeed(t, func(t *testing.T, seed int64) {
		a := runCounterScenario(t, seed)
		b := runCounterScenario(t, seed)
		if a.hash != b.hash {
			t.Fatalf("seed %d gave two traces: %s", seed, FirstDiff(a.trace, b.trace))
		}
		all := strings.Join(a.trace, "\n")
		for _, want := range []string{
			"fault partition", "fault heal", "fault crash", ": gone", "fault restart",
			"fault pause", ": held", "(replayed)", " recv n", "| boot own=",
		} {
			if !strings.Contains(all, want) {
				t.Errorf("trace never shows %q", want)
			}
		}
	})
}

// ... and different seeds give different traces.
func TestDifferentSeedsDifferentTraces(t *testing.T) {
	seeds := []int64{1, 2, 3, 4, 5}
	bySeed := map[string]int64{}
	for _, seed := range seeds {
		run := runCounterScenario(t, seed)
		if other, dup := bySeed[run.hash]; dup {
			t.Errorf("seeds %d and %d gave the same trace %s", other, seed, run.hash)
		}
		bySeed[run.hash] = seed
	}
}

// forEachSeed runs fn as a subtest for seeds 1 to 3.
func forEachSeed(t *testing.T, fn func(t *testing.T, seed int64)) {
	for seed := int64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { fn(t, seed) })
	}
}
