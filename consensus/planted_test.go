//go:build floe_bugs

package consensus_test

import (
	"testing"

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
