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
