//go:build floe_bugs

package sim

import (
	"fmt"
	"testing"

	"github.com/floe-broker/floe/internal/plant"
)

func plantedRun(t *testing.T, bug string, seeds int) {
	plant.Set(bug)
	defer plant.Reset()
	caught := 0
	for seed := int64(1); seed <= int64(seeds); seed++ {
		res := Run(ChooseOptions(seed))
		if res.Failed() {
			caught++
			t.Logf("seed %d: %v", seed, res.Violations)
		}
	}
	t.Logf("%s caught in %d of %d seeds", bug, caught, seeds)
}

func TestPlantedBugProbe(t *testing.T) {
	for _, bug := range []string{plant.AckBeforeQuorum, plant.AckBeforeFsync, plant.VoteWithoutLogCheck} {
		t.Run(bug, func(t *testing.T) { plantedRun(t, bug, 30) })
	}
	_ = fmt.Sprint
}
