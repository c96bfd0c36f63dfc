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
		o.KIP848Members = 3
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
