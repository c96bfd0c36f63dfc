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
