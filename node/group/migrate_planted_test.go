//go:build floe_bugs

package group

import (
	"testing"

	"github.com/floe-broker/floe/internal/plant"
)

// The mixed model must catch an upgrade that forgets what the classic
// members own (planted: migration-forgets-classic-assignment): the
// consumer member is given partitions a classic member still holds.
func TestMigrationForgetsClassicAssignmentPlantedBug(t *testing.T) {
	plant.Set(plant.MigrationForgetsClassicAssignment)
	defer plant.Reset()
	for seed := int64(1); seed <= 40; seed++ {
		if err := mixedRun(t, seed, false); err != nil {
			t.Logf("caught at seed %d: %v", seed, err)
			return
		}
	}
	t.Fatal("the planted upgrade that forgets classic assignments went unnoticed in 40 seeds")
}

// The static replacement model must catch a downgrade that hands every
// member its target (Kafka's way) without a rebalance while the group
// still reconciles (planted: downgrade-replaced-hands-target): the
// replacing member is given a partition another member still owns.
func TestDowngradeReplacedHandsTargetPlantedBug(t *testing.T) {
	plant.Set(plant.DowngradeReplacedHandsTarget)
	defer plant.Reset()
	for seed := int64(1); seed <= 40; seed++ {
		if err := mixedRun(t, seed, true); err != nil {
			t.Logf("caught at seed %d: %v", seed, err)
			return
		}
	}
	t.Fatal("the planted downgrade that hands out targets went unnoticed in 40 seeds")
}
