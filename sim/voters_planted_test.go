//go:build floe_bugs

package sim

import (
	"testing"

	"github.com/floe-broker/floe/internal/plant"
)

// The voter-change fault's planted bug (issue 23): a controller voter
// change answered once proposed, not once committed. The isolated
// leader's answer is then a lie, and the controller-voters invariant
// (voters.go) must catch it within the default seeds.
func TestPlantedBugVoterAckBeforeCommit(t *testing.T) {
	catchPlanted(t, plant.VoterAckBeforeCommit)
}
