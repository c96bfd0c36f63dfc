//go:build floe_bugs

package sim

import (
	"testing"

	"github.com/floe-broker/floe/internal/plant"
)

// The ACL checker can fail: with an ALLOW winning over a matching DENY
// planted in node/acl, the default seeds (authentication and ACLs on in
// about a third of them) must report acl-decisions invalid.
func TestPlantedBugACLAllowBeatsDeny(t *testing.T) { catchPlanted(t, plant.ACLAllowBeatsDeny) }

// With brokers other than the controller's leader skipping DeleteAcls, the
// acl-state check must see the brokers' ACLs diverge (a deleted ACL still
// in force on a follower).
func TestPlantedBugACLDeleteMissed(t *testing.T) { catchPlanted(t, plant.ACLDeleteMissed) }
