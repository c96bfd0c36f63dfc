package node

import (
	"net/netip"
	"strings"

	"github.com/floe-broker/floe/node/controller"
)

// ClientQuota resolves the quota on key (controller.QuotaProducerByteRate,
// ...) for a client, from this broker's applied metadata, in Kafka's order
// of precedence (controller.State.ClientQuota). The user is the
// principal's name: "User:alice" is user alice, and an unauthenticated
// client is user ANONYMOUS, as in Kafka. The runtime calls it on the
// reactor's thread to enforce byte-rate quotas (node/runtime/quotas.go).
func (r *Reactor) ClientQuota(key, principal, clientID string) (controller.QuotaMatch, bool) {
	if r.ctl == nil || r.ctl.state == nil {
		return controller.QuotaMatch{}, false
	}
	return r.ctl.state.ClientQuota(key, QuotaUser(principal), clientID)
}

// IPQuota resolves the connection_creation_rate quota for connections
// from addr, from the replicated metadata (controller.State.IPQuota).
func (r *Reactor) IPQuota(addr netip.Addr) (controller.QuotaMatch, bool) {
	if r.ctl == nil || r.ctl.state == nil {
		return controller.QuotaMatch{}, false
	}
	return r.ctl.state.IPQuota(controller.QuotaConnectionCreationRate, addr)
}

// QuotaUser is the quota user of a principal: its name after the type.
func QuotaUser(principal string) string {
	if _, name, ok := strings.Cut(principal, ":"); ok {
		return name
	}
	return principal
}
