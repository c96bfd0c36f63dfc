//go:build floe_itest

package runtime

import (
	"os"
	"strings"

	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/kafka"
)

// testPrincipal, in test builds only (tag floe_itest, never in a release),
// lets a real client choose its principal on a PLAINTEXT connection through
// its client id: with FLOE_ITEST_PRINCIPAL_FROM_CLIENT_ID=1 in the
// broker's environment, client id "as:User:alice" is principal User:alice.
// It stands in for SASL in the authorization tests; it only applies while
// no authentication has set a principal.
func testPrincipal(c *kafka.ConnInfo, client *node.Client) {
	if os.Getenv("FLOE_ITEST_PRINCIPAL_FROM_CLIENT_ID") != "1" || (client.Principal != "" && client.Principal != "User:ANONYMOUS") {
		return
	}
	if p, ok := strings.CutPrefix(c.ClientID, "as:"); ok {
		client.Principal = p
	}
	if client.Listener == "" {
		client.Listener = "PLAINTEXT"
	}
}
