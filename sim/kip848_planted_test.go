//go:build floe_bugs

package sim

import (
	"testing"

	"github.com/floe-broker/floe/internal/plant"
)

// The KIP-848 planted bug (issue 19): a member given its whole target
// before the other members revoked those partitions, caught by the
// workload's ownership checker (kip848.go).
func TestPlantedBugConsumerAssignBeforeRevoke(t *testing.T) {
	catchPlanted(t, plant.ConsumerAssignBeforeRevoke)
}

// The migration planted bug (issue 19): an upgrade from a classic group
// that forgets what the classic members own, so a consumer-protocol
// member is given partitions a classic member still holds; caught by the
// ownership checker over the classic members (kip848_classic.go).
func TestPlantedBugMigrationForgetsClassicAssignment(t *testing.T) {
	catchPlanted(t, plant.MigrationForgetsClassicAssignment)
}

// The downgrade-by-replacement planted bug (issue 19): when a classic
// static member replaces the last consumer-protocol member, the group
// becomes classic handing every member its target at once (Kafka's way)
// with no rebalance, while partitions of that target may still be held
// by their owners; caught by the ownership checker. The drawn seeds reach
// this downgrade in about a quarter of the seeds with classic members,
// too rarely mid-reconciliation, so the group is forced to one static
// consumer-protocol member and two classic ones (kip848StaticOptions).
func TestPlantedBugDowngradeReplacedHandsTarget(t *testing.T) {
	plant.Reset()
	plant.Set(plant.DowngradeReplacedHandsTarget)
	defer plant.Reset()
	for seed := int64(1); seed <= kip848StaticSeeds; seed++ {
		res := Run(kip848StaticOptions(seed))
		if caught := checkerViolations(res); len(caught) > 0 {
			t.Logf("caught at seed %d: %v", seed, caught)
			return
		}
	}
	t.Fatalf("the planted downgrade that hands out targets went unnoticed in %d seeds", kip848StaticSeeds)
}
