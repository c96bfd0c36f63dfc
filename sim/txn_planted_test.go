//go:build floe_bugs

package sim

import (
	"testing"

	"github.com/floe-broker/floe/internal/plant"
)

// The transaction planted bugs (issue 16), caught by the transactional
// workload's checkers (txn.go) within plantedSeedsMax seeds.

func TestPlantedBugTxnLSOIgnoresOpen(t *testing.T) { catchPlanted(t, plant.TxnLSOIgnoresOpen) }
func TestPlantedBugTxnMarkerBeforeDecision(t *testing.T) {
	catchPlanted(t, plant.TxnMarkerBeforeDecision)
}
