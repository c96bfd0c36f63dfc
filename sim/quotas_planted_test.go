//go:build floe_bugs

package sim

import (
	"testing"

	"github.com/floe-broker/floe/internal/plant"
)

// With brokers other than the controller's leader skipping
// AlterClientQuota, the quota-state check must see the brokers' quotas
// diverge after the heal.
func TestPlantedBugQuotaAlterMissed(t *testing.T) { catchPlanted(t, plant.QuotaAlterMissed) }
