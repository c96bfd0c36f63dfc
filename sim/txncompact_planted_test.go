//go:build floe_bugs

package sim

import (
	"testing"

	"github.com/floe-broker/floe/internal/plant"
)

// Compaction that lets an aborted transaction's record shadow older
// records of its key (logstore/compact.go): the aborted record goes too,
// so the key loses its latest committed value, which the final
// read_committed read misses (txncompact.go, lost-latest).
func TestPlantedBugCompactAbortedShadows(t *testing.T) {
	catchPlanted(t, plant.CompactAbortedShadows)
}
