//go:build floe_bugs

package node

import (
	"testing"

	"github.com/floe-broker/floe/internal/plant"
)

// The chain test must catch a leader that links records to a head it kept
// from an earlier term of its own (planted: audit-stale-chain-head).
func TestAuditChainPlantedBug(t *testing.T) {
	plant.Set(plant.AuditStaleChainHead)
	defer plant.Reset()
	for _, seed := range []int64{42, 43} {
		if brk := auditAcrossLeaderChanges(t, seed); brk != nil {
			t.Logf("seed %d: caught: %v", seed, brk)
			return
		}
	}
	t.Fatalf("the planted stale chain head went unnoticed")
}
