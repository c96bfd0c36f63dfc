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
