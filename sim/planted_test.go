//go:build floe_bugs

package sim

import (
	"testing"

	"github.com/floe-broker/floe/internal/plant"
)

func TestPlantedBugDebug(t *testing.T) {
	plant.Set(plant.AckBeforeFsync)
	defer plant.Reset()
	for _, seed := range []int64{1, 2, 3, 4} {
		res := Run(ChooseOptions(seed))
		t.Log(seed, res.TraceHash, res.Stats.Events, res.Violations)
	}
}
