package sim

import (
	"strings"
	"testing"
)

// fenceSeedsMax bounds the seeds TestControllerLogCutBelowSnapshotIsFenced
// tries.
const fenceSeedsMax = 12

// A controller log cut back below its snapshot (sim seed 911081 on
// 113312f): the replica had held, acknowledged and known committed entries
// past the snapshot, and recovery restarts its log at the snapshot point.
// It must come back fenced over what it lost (the acknowledged-entries-
// unfenced invariant), and no committed entry may change. The drawn seeds
// reach this rarely (none in 200 `--corrupt --reassign` seeds of the code
// of the fix), so the test forces it: the corruption fault cuts the
// controller's segment (Options.Faults.CutController) and the controller
// snapshots every 8 entries. It requires that some seed really lost
// committed entries at a restart and was fenced over them (the coverage
// row), so it cannot pass by never reaching the case; the mutation
// fence-at-snapshot-after-cut (scripts/mutate) makes it fail.
func TestControllerLogCutBelowSnapshotIsFenced(t *testing.T) {
	reached := 0
	for seed := int64(1); seed <= fenceSeedsMax && reached < 2; seed++ {
		o := ChooseOptions(seed).WithCorruption()
		o.Faults.CutController = true
		o.Broker.CtlSnapshotEntries = 8
		res := Run(o)
		if res.Failed() {
			t.Errorf("FAIL seed %d: %s", seed, strings.Join(res.Violations, "; "))
		}
		if n := res.Coverage[covFencedOverLoss]; n > 0 {
			t.Logf("seed %d: %d restarted members fenced over committed entries they lost", seed, n)
			reached++
		}
	}
	if reached == 0 {
		t.Fatalf("no restarted member lost committed entries in %d seeds with the controller's log cut back", fenceSeedsMax)
	}
}
