//go:build floe_bugs

package sim

import (
	"testing"

	"github.com/floe-broker/floe/internal/plant"
)

// The balancer's planted bug (issue 23): it proposes every move it finds
// at once, past its bound on moves in flight; the balancer-bound
// invariant (balance.go) must catch it within the default seeds.
func TestPlantedBugBalancerIgnoresBound(t *testing.T) {
	catchPlanted(t, plant.BalancerIgnoresBound)
}

// The load goal's planted bug: with no hysteresis, moves go back and
// forth in the healed cluster; balancer-flap must catch it within the
// default seeds.
func TestPlantedBugBalancerLoadFlaps(t *testing.T) {
	catchPlanted(t, plant.BalancerLoadFlaps)
}
