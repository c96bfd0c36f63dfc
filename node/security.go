package node

// Security on the node: authorization of every request (authz.go) and the
// audit log (audit.go, audit_changes.go). The ACLs and roles live in the
// controller's metadata (node/controller/security.go); the rules are
// node/acl's; the record format and chain are node/audit's.
//
// Hooks the rest of the node calls: HandleRequest wraps each answer with
// auditChanges; the tick calls auditTick; afterApply calls
// auditAfterApply; handleRPC passes rpcAuditAppend and rpcAuditAck to
// handleAuditRPC.

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
)

// SecurityConfig is a broker's authorization and audit configuration.
type SecurityConfig struct {
	// Authorizer is "" or "none" (every request is allowed, as before ACLs
	// existed) or "acl" (Kafka's ACL authorizer, with roles).
	Authorizer string
	// AllowEveryoneIfNoACL is allow.everyone.if.no.acl.found (default
	// false: a resource without ACLs is closed to all but super users).
	AllowEveryoneIfNoACL bool
	// SuperUsers are allowed everything (super.users).
	SuperUsers []string
	// Audit configures the audit log.
	Audit AuditConfig
}

// AuditConfig configures the audit log.
type AuditConfig struct {
	// Enabled writes audit records to the internal topic __audit_log.
	Enabled bool
	// Allows records allowed authorization decisions too (denials always
	// are). Every produce and fetch then leaves a record: a lot.
	Allows bool
	// Partitions of __audit_log when this broker creates it (default 1:
	// one chain, in one order).
	Partitions int32
	// Retention is the topic's retention.ms (default 7 days).
	Retention time.Duration
	// QueueMax bounds the records waiting to reach the topic (default
	// 100,000); past it new records are dropped and counted
	// (Stats.AuditDropped).
	QueueMax int
}

// Authorizer names.
const (
	AuthorizerNone = "none"
	AuthorizerACL  = "acl"
)

// security is the reactor's authorization and audit state.
type security struct {
	superUsers map[string]bool
	audit      auditState // audit.go
}

func (c SecurityConfig) withDefaults() SecurityConfig {
	if c.Audit.Partitions <= 0 {
		c.Audit.Partitions = 1
	}
	if c.Audit.Retention <= 0 {
		c.Audit.Retention = 7 * 24 * time.Hour
	}
	if c.Audit.QueueMax <= 0 {
		c.Audit.QueueMax = 100000
	}
	return c
}

func newSecurity(cfg SecurityConfig) security {
	s := security{superUsers: map[string]bool{}}
	for _, u := range cfg.SuperUsers {
		s.superUsers[u] = true
	}
	return s
}

// enforcing reports whether the ACL authorizer is on.
func (c SecurityConfig) enforcing() bool { return c.Authorizer == AuthorizerACL }

// ValidateSecurityConfig checks a configuration a broker is started with.
func ValidateSecurityConfig(c SecurityConfig) error {
	switch c.Authorizer {
	case "", AuthorizerNone, AuthorizerACL:
	default:
		return fmt.Errorf("authorizer %q: want none or acl", c.Authorizer)
	}
	for _, u := range c.SuperUsers {
		if err := acl.ValidatePrincipal(u); err != nil {
			return fmt.Errorf("super user: %v", err)
		}
	}
	return nil
}

// expiredACLs is the expiry answer of the ACL APIs (nil for any other
// request): REQUEST_TIMED_OUT on every creation and filter; the change
// may still happen.
func expiredACLs(req kmsg.Request) kmsg.Response {
	timedOut := kerr.RequestTimedOut.Code
	switch q := req.(type) {
	case *kmsg.DescribeACLsRequest:
		resp := q.ResponseKind().(*kmsg.DescribeACLsResponse)
		resp.ErrorCode = timedOut
		return resp
	case *kmsg.CreateACLsRequest:
		resp := q.ResponseKind().(*kmsg.CreateACLsResponse)
		for range q.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode = timedOut
			resp.Results = append(resp.Results, res)
		}
		return resp
	case *kmsg.DeleteACLsRequest:
		resp := q.ResponseKind().(*kmsg.DeleteACLsResponse)
		for range q.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode = timedOut
			resp.Results = append(resp.Results, res)
		}
		return resp
	}
	return nil
}
