//go:build !floe_itest

package runtime

import (
	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/kafka"
)

// testPrincipal does nothing in a real build: a connection's principal
// comes from its authentication only. (Builds with the floe_itest tag, for
// the real-client tests, replace it: principal_itest.go.)
func testPrincipal(*kafka.ConnInfo, *node.Client) {}
