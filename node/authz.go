package node

// Authorization: what each request's client may do.
//
// A handler takes an authz for its request (r.authorize(c, req)) and asks
// it, in one place near its top, what Kafka's table (the notes' "ACL each
// API needs") says the API needs: may for a check whose denial the client
// is told of (and the audit log records), sees for filtering a listing
// (Metadata of every topic, ListGroups, OffsetFetch of every topic), where
// Kafka neither tells nor logs. With the authorizer off (the default)
// everything is allowed and the authorized-operations bitfields list every
// operation.
//
// The principal is Client.Principal ("User:ANONYMOUS" when empty); the
// host is Client.Remote's address; the roles are those the principal is
// bound to in the metadata. Decisions are pure functions of those and the
// applied metadata (node/acl), so every broker decides alike.

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
	"github.com/floe-broker/floe/node/audit"
)

// authz answers for one request.
type authz struct {
	r   *Reactor
	c   Client
	key int16
	on  bool
	q   acl.Request
	az  acl.Authorizer
}

// allowAll is the authz of every request while the authorizer is off.
var allowAll = &authz{}

// authorize returns the authz of a request from c.
func (r *Reactor) authorize(c Client, req kmsg.Request) *authz {
	if !r.cfg.Security.enforcing() {
		return allowAll
	}
	a := &authz{r: r, c: c, key: req.Key(), on: true}
	a.q = acl.Request{Principal: principalOf(c), Host: clientHost(c.Remote)}
	st := r.ctl.state
	a.q.Roles = st.RolesOf(a.q.Principal)
	a.az = r.aclAuthorizer()
	return a
}

// aclAuthorizer is the authorizer over the applied metadata's ACLs.
func (r *Reactor) aclAuthorizer() acl.Authorizer {
	return acl.Authorizer{ACLs: r.ctl.state.ACLIndex(), SuperUsers: r.sec.superUsers, AllowIfNoACL: r.cfg.Security.AllowEveryoneIfNoACL}
}

// mayDescribeTopic reports whether principal, from host, may DESCRIBE a
// topic: a consumer group member's regex subscription is resolved with it
// (group.Env.MayDescribe), at a heartbeat of any member of the group, so
// no request of that principal is at hand. Nothing is audited, as for a
// filtered listing (Kafka's regex resolution does not log either).
func (r *Reactor) mayDescribeTopic(principal, host, topic string) bool {
	if !r.cfg.Security.enforcing() {
		return true
	}
	st := r.ctl.state
	q := acl.Request{Principal: principal, Host: host, Roles: st.RolesOf(principal),
		ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: topic, Operation: kmsg.ACLOperationDescribe}
	az := r.aclAuthorizer()
	return az.Authorize(q).Allowed
}

func principalOf(c Client) string {
	if c.Principal == "" {
		return acl.Anonymous
	}
	return c.Principal
}

// clientHost is the address part of "host:port" (brackets removed).
func clientHost(remote string) string {
	host := remote
	if i := strings.LastIndexByte(host, ':'); i >= 0 && (strings.HasPrefix(host, "[") || strings.Count(host, ":") == 1) {
		host = host[:i]
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

// may reports whether the client may perform op on a resource. A denial is
// recorded in the audit log, and so is an allow when the log records them.
func (a *authz) may(rt acl.ResourceType, name string, op acl.Operation) bool {
	if !a.on {
		return true
	}
	d := a.decide(rt, name, op)
	a.record(rt, name, op, d)
	return d.Allowed
}

// sees is may without a record of a denial: for lists filtered to what the
// client may see.
func (a *authz) sees(rt acl.ResourceType, name string, op acl.Operation) bool {
	if !a.on {
		return true
	}
	d := a.decide(rt, name, op)
	if d.Allowed {
		a.record(rt, name, op, d)
	}
	return d.Allowed
}

func (a *authz) decide(rt acl.ResourceType, name string, op acl.Operation) acl.Decision {
	q := a.q
	q.ResourceType, q.ResourceName, q.Operation = rt, name, op
	return a.az.Authorize(q)
}

func (a *authz) topic(name string, op acl.Operation) bool {
	return a.may(kmsg.ACLResourceTypeTopic, name, op)
}

func (a *authz) group(name string, op acl.Operation) bool {
	return a.may(kmsg.ACLResourceTypeGroup, name, op)
}

func (a *authz) cluster(op acl.Operation) bool {
	return a.may(kmsg.ACLResourceTypeCluster, acl.ClusterName, op)
}

func (a *authz) txnID(id string, op acl.Operation) bool {
	return a.may(kmsg.ACLResourceTypeTransactionalId, id, op)
}

// mayAny reports whether the client may perform op on some resource of the
// type (Kafka's authorizeByResourceType).
func (a *authz) mayAny(rt acl.ResourceType, op acl.Operation) bool {
	if !a.on {
		return true
	}
	q := a.q
	q.ResourceType, q.Operation = rt, op
	d := a.az.AuthorizeAny(q)
	a.record(rt, "*", op, d)
	return d.Allowed
}

// ops is the authorized-operations bitfield of a resource (every
// operation Kafka reports for its type when the authorizer is off).
func (a *authz) ops(rt acl.ResourceType, name string) int32 {
	if !a.on {
		var bits int32
		for _, op := range acl.Operations[rt] {
			bits |= 1 << op
		}
		return bits
	}
	q := a.q
	q.ResourceType, q.ResourceName = rt, name
	return a.az.AuthorizedOps(q)
}

// record writes an authorization decision to the audit log: every denial,
// and allows when configured.
func (a *authz) record(rt acl.ResourceType, name string, op acl.Operation, d acl.Decision) {
	if d.Allowed && !a.r.cfg.Security.Audit.Allows {
		return
	}
	reason := d.Reason
	if d.Binding != nil {
		reason = fmt.Sprintf("%s: %s", d.Reason, d.Binding)
	}
	a.r.auditEvent(a.c, audit.Event{Kind: audit.Authorization, API: kmsg.NameForKey(a.key), Action: op.String(),
		Resource: audit.Resource{Type: resourceTypeName(rt), Name: name}, Success: d.Allowed, Reason: reason})
}

// resourceTypeName is how audit records name an ACL resource type.
func resourceTypeName(rt acl.ResourceType) string { return strings.ToLower(rt.String()) }

// The errors a denial gets, per resource type.
var (
	errTopicAuth   = kerr.TopicAuthorizationFailed
	errGroupAuth   = kerr.GroupAuthorizationFailed
	errClusterAuth = kerr.ClusterAuthorizationFailed
	errTxnAuth     = kerr.TransactionalIDAuthorizationFailed
)

// configResource checks access to a config resource: DESCRIBE_CONFIGS or
// ALTER_CONFIGS on a topic (TOPIC_AUTHORIZATION_FAILED) or, for broker
// resources, on the cluster (CLUSTER_AUTHORIZATION_FAILED); DESCRIBE or
// ALTER on the cluster for a role (roles.go), as for ACLs.
func (a *authz) configResource(kind kmsg.ConfigResourceType, name string, alter bool) error {
	op, roleOp := kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationDescribe
	if alter {
		op, roleOp = kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationAlter
	}
	switch kind {
	case kmsg.ConfigResourceTypeTopic:
		if !a.topic(name, op) {
			return errTopicAuth
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !a.group(name, op) {
			return errGroupAuth
		}
	case roleConfigResource:
		if !a.cluster(roleOp) {
			return errClusterAuth
		}
	default:
		if !a.cluster(op) {
			return errClusterAuth
		}
	}
	return nil
}

// deniedTopics returns the topics of a request the client may not perform
// op on (nil when it may on all), each checked once.
func deniedTopics[T any](a *authz, topics []T, name func(T) string, op acl.Operation) map[string]bool {
	if !a.on {
		return nil
	}
	var denied map[string]bool
	seen := map[string]bool{}
	for _, t := range topics {
		n := name(t)
		if seen[n] {
			continue
		}
		seen[n] = true
		if !a.topic(n, op) {
			if denied == nil {
				denied = map[string]bool{}
			}
			denied[n] = true
		}
	}
	return denied
}
