//go:build floe_bugs

package group

import (
	"testing"

	"github.com/floe-broker/floe/internal/plant"
)

// The reconciliation model must catch a coordinator that gives a member
// its whole target before the other members revoked those partitions
// (planted: consumer-assign-before-revoke).
func TestConsumerAssignBeforeRevokePlantedBug(t *testing.T) {
	plant.Set(plant.ConsumerAssignBeforeRevoke)
	defer plant.Reset()
	for seed := int64(1); seed <= 50; seed++ {
		if err := reconciliationRun(t, seed); err != nil {
			t.Logf("caught at seed %d: %v", seed, err)
			return
		}
	}
	t.Fatal("the planted early assignment went unnoticed in 50 seeds")
}
