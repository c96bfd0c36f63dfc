package sim

import (
	"strings"
	"testing"
	"time"
)

// Negative tests of the faults in faults_more.go: beyond the bounds the
// product assumes, the faults must produce failures the checkers catch.
// They prove the checks can fail, and that the faults reach what they
// claim to. Each stops at the first seed that fails as it must.

// negativeSeedsMax bounds the seeds a negative test tries.
const negativeSeedsMax = 30

// firstCaught runs opts(seed) for seeds 1.. until caught says a result
// failed as required, and returns that seed (0: none did).
func firstCaught(t *testing.T, opts func(seed int64) Options, caught func(*Result) bool) int64 {
	t.Helper()
	for seed := int64(1); seed <= negativeSeedsMax; seed++ {
		res := Run(opts(seed))
		if caught(res) {
			t.Logf("caught at seed %d:\n\t%s", seed, strings.Join(res.Violations, "\n\t"))
			return seed
		}
	}
	return 0
}

// Clock drift beyond the lease bound: a leader whose clock runs at a fifth
// of true time holds its read lease five times too long, so once it is cut
// off it serves reads a later leader has overtaken. The read-lease
// invariant (a read answered by a deposed leader) or the history checkers
// must see it. Within the bound (TestSim's seeds) they never do.
//
// Only the drift matters here: the share-group workload and the broker
// join are off (withoutShareOrJoin), so a change to their draws or their
// reach (h-share put the share workload on 5-node clusters and the join
// into share seeds) cannot move this test's seeds off their stale reads.
func TestDriftBeyondLeaseBoundServesStaleReads(t *testing.T) {
	opts := func(seed int64) Options {
		o := withoutShareOrJoin(ChooseOptions(seed))
		f := &o.Faults
		f.More.Drift, f.More.DriftUnsafe = 4, true
		f.Partition, f.Pause, f.Aim = 3, 1, 1
		f.Corrupt, f.Reassign = 0, 0
		o.Broker.LeaseMargin = 0.8
		return o
	}
	stale := func(res *Result) bool {
		for _, v := range res.Violations {
			if strings.Contains(v, "read-from-deposed-leader") || strings.HasPrefix(v, "checker:") && strings.Contains(v, " invalid") {
				return true
			}
		}
		return false
	}
	seed := firstCaught(t, opts, stale)
	if seed == 0 {
		t.Fatalf("no stale read caught in %d seeds with clock drift beyond the lease bound", negativeSeedsMax)
	}
	// The same seed with drift within the bound serves no stale read: it
	// is the drift's size that matters.
	o := opts(seed)
	o.Faults.More.DriftUnsafe = false
	o.Faults.More.DriftRatio = driftRatio(o.Broker.LeaseMargin)
	if res := Run(o); stale(res) {
		t.Errorf("seed %d with drift within the bound still served stale reads: %v", seed, res.Violations)
	}
}

// withoutShareOrJoin is o with neither the share-group workload nor the
// broker-join fault, whatever its seed drew.
func withoutShareOrJoin(o Options) Options {
	o.Share = ShareOptions{}
	o.Broker.Shares = o.Share.brokerShares()
	o.Join = JoinOptions{}
	o.Broker.JoinVia = 0
	return o
}

// A lying fsync on every node (half the syncs lie), with power cuts:
// acknowledged entries are lost on a majority, and the history checkers
// or the white-box invariants (a committed entry changed, replicas'
// committed prefixes differ) must say so.
func TestLyingFsyncOnEveryNodeIsCaught(t *testing.T) {
	opts := func(seed int64) Options {
		o := ChooseOptions(seed)
		f := &o.Faults
		f.More.LyingSync, f.More.LieAll = 0.5, true
		f.PowerCut, f.DurMax = 2, 300*time.Millisecond
		f.Corrupt, f.Reassign = 0, 0
		return o
	}
	lost := func(res *Result) bool {
		for _, v := range res.Violations {
			if strings.HasPrefix(v, "checker:") && strings.Contains(v, " invalid") || strings.HasPrefix(v, "invariant:") {
				return true
			}
		}
		return false
	}
	if seed := firstCaught(t, opts, lost); seed == 0 {
		t.Fatalf("no violation caught in %d seeds with every fsync lying and power cuts", negativeSeedsMax)
	}
}
