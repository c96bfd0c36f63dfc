//go:build floe_bugs

package consensus_test

import (
	"testing"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/internal/plant"
)

// TestPlantedBugs proves the randomized checker can fail: with each bug
// planted, some seed among the first 50 must report a violation.
//
//	go test -tags floe_bugs -run PlantedBug ./consensus
func TestPlantedBugs(t *testing.T) {
	for _, bug := range []string{plant.VoteWithoutLogCheck, plant.CommitPrevTerm} {
		t.Run(bug, func(t *testing.T) {
			plant.Reset()
			plant.Set(bug)
			defer plant.Reset()
			seeds := make([]int64, 50)
			for i := range seeds {
				seeds[i] = int64(i + 1)
			}
			caught := 0
			first := ""
			for _, res := range runSeeds(seeds) {
				if res.err != nil {
					if caught == 0 {
						first = res.report()
					}
					caught++
				}
			}
			if caught == 0 {
				t.Fatalf("planted bug %s not caught by any of %d seeds", bug, len(seeds))
			}
			t.Logf("planted bug %s caught by %d of %d seeds; the first:\n%s", bug, caught, len(seeds), first)
		})
	}
}

// TestPlantedBugVoterModel proves the membership model test can fail:
// with a second change accepted while one is pending, some of its first
// 100 seeds fail. (A new leader changing membership before its own term's
// first entry is applied, plant.ConfBeforeOwnTerm, needs a schedule these
// seeds do not reach: testdata/confchange_voters.txt catches it.)
func TestPlantedBugVoterModel(t *testing.T) {
	for _, bug := range []string{plant.ConfTwoPending} {
		t.Run(bug, func(t *testing.T) {
			plant.Reset()
			plant.Set(bug)
			defer plant.Reset()
			caught, first := 0, error(nil)
			for seed := int64(1); seed <= 100; seed++ {
				if _, err := consensus.RunVoterModel(seed, 400); err != nil {
					if caught == 0 {
						first = err
					}
					caught++
				}
			}
			if caught == 0 {
				t.Fatalf("planted bug %s not caught by any of 100 seeds", bug)
			}
			t.Logf("planted bug %s caught by %d of 100 seeds; the first: %v", bug, caught, first)
		})
	}
}
