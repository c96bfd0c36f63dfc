package sim

import "testing"

// TestKIP848Workload runs a few seeds with three KIP-848 members and
// checks that they took partitions and committed (the checkers in
// kip848.go ran on real traffic) and that no seed failed.
func TestKIP848Workload(t *testing.T) {
	seeds := int64(4)
	taken, committed := 0, 0
	for seed := int64(1); seed <= seeds; seed++ {
		o := ChooseOptions(seed)
		o.KIP848Members, o.KIP848Classic = 3, 0
		res := Run(o)
		if res.Failed() {
			t.Fatalf("seed %d: %v", seed, res.Violations)
		}
		taken += res.Coverage[covKIP848Assigned]
		committed += res.Coverage[covKIP848Committed]
	}
	if taken == 0 || committed == 0 {
		t.Fatalf("in %d seeds the members took %d partitions and committed %d times", seeds, taken, committed)
	}
	t.Logf("%d seeds: %d partitions taken, %d commits acknowledged", seeds, taken, committed)
}

// TestKIP848MixedWorkload runs seeds with consumer-protocol and classic
// members in one group: the group is upgraded and downgraded as they come
// and go (migrate.go), and the checkers hold. It checks the classic
// members took partitions both in a classic group and inside a consumer
// group, so the migration really ran.
func TestKIP848MixedWorkload(t *testing.T) {
	seeds := int64(4)
	cov := map[string]int{}
	for seed := int64(1); seed <= seeds; seed++ {
		o := ChooseOptions(seed)
		// Four partitions for four members: with fewer, the classic
		// members that came first keep every partition (the assignor is
		// sticky) and the consumer-protocol members rarely get one.
		o.KIP848Members, o.KIP848Classic = 2, 2
		o.Partitions = max(o.Partitions, 4)
		res := Run(o)
		if res.Failed() {
			t.Fatalf("seed %d: %v", seed, res.Violations)
		}
		for _, c := range []string{covKIP848Assigned, covKIP848ClassicAssigned, covKIP848ClassicInCG, covKIP848ClassicLed, covKIP848Committed} {
			cov[c] += res.Coverage[c]
		}
	}
	for c, n := range cov {
		if n == 0 {
			t.Errorf("in %d seeds, never: %s", seeds, c)
		}
	}
	t.Logf("%d seeds: %v", seeds, cov)
}

// kip848StaticSeeds and kip848StaticOptions: the static-replacement runs
// (TestKIP848StaticRestarts and its planted bug): one static
// consumer-protocol member and two static classic members, whose crashed
// processes come back speaking the other protocol half the time, so the
// group is upgraded and downgraded by replacement.
const kip848StaticSeeds = 30

func kip848StaticOptions(seed int64) Options {
	o := ChooseOptions(seed)
	o.KIP848Members, o.KIP848Classic = 1, 2
	o.Partitions = max(o.Partitions, 4)
	return o
}

func TestKIP848StaticRestarts(t *testing.T) {
	switched := 0
	for seed := int64(1); seed <= kip848StaticSeeds; seed++ {
		res := Run(kip848StaticOptions(seed))
		if res.Failed() {
			t.Fatalf("seed %d: %v", seed, res.Violations)
		}
		switched += res.Coverage[covKIP848Switched]
	}
	if switched == 0 {
		t.Fatalf("in %d seeds no static member restarted with the other protocol", kip848StaticSeeds)
	}
	t.Logf("%d seeds: %d restarts with the other protocol", kip848StaticSeeds, switched)
}
