package sim

import (
	"strings"
	"testing"
)

// replaceDiskSeedsMax bounds the seeds TestReplacedDiskIsFenced tries.
const replaceDiskSeedsMax = 8

// TestReplacedDiskIsFenced runs seeds with the disk-loss replacement fault
// on (replacedisk.go): every check must hold, and some seed must have
// restarted a member that had held committed entries on the lost disk, and
// found it fenced over them (the coverage row), so the test cannot pass
// by never reaching the case. The mutation lost-disk-controller-unfenced
// (scripts/mutate) makes it fail.
func TestReplacedDiskIsFenced(t *testing.T) {
	reached := 0
	for seed := int64(1); seed <= replaceDiskSeedsMax && reached < 2; seed++ {
		res := Run(ChooseOptions(seed).WithReplaceDisk())
		if res.Failed() {
			t.Errorf("FAIL seed %d: %s\nreplay: go run ./cmd/floe sim --seed %d --replace-disk", seed, strings.Join(res.Violations, "; "), seed)
		}
		if n := res.Coverage[covFencedOverLoss]; n > 0 {
			t.Logf("seed %d: %d restarted members fenced over committed entries they lost", seed, n)
			reached++
		}
	}
	if reached == 0 {
		t.Fatalf("no member restarted on a replaced disk was fenced over committed entries in %d seeds", replaceDiskSeedsMax)
	}
}
