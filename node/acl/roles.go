package acl

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The built-in roles. Each grants ALLOW bindings on every resource of the
// types it names (the literal "*"), from any host. None grants anything on
// internal topics (names starting with "__": __consumer_offsets,
// __audit_log) except admin: reading the audit log takes admin, a super
// user, or an ACL naming the topic.
//
//   - admin: ALL on the cluster, every topic, group and transactional id.
//     Everything a super user may do, except that DENY ACLs still apply.
//   - operator: runs the cluster without touching data or security:
//     DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS and CREATE on the cluster;
//     CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS and ALTER_CONFIGS on
//     topics; DESCRIBE and DELETE on groups; DESCRIBE on transactional ids.
//     Not ALTER on the cluster: Kafka uses that one operation for ACL
//     changes (and so role changes) as well as for partition reassignment
//     and broker removal, so granting it would let an operator grant itself
//     anything.
//   - producer: what kafka-acls --producer grants, on every topic: WRITE,
//     DESCRIBE and CREATE on topics; WRITE and DESCRIBE on transactional
//     ids; IDEMPOTENT_WRITE on the cluster.
//   - consumer: what kafka-acls --consumer grants, on every topic and
//     group: READ and DESCRIBE on topics; READ and DESCRIBE on groups.
//   - viewer: metadata and configs, no data: DESCRIBE and DESCRIBE_CONFIGS
//     on the cluster and on topics; DESCRIBE on groups and transactional
//     ids.
var Builtin = map[string][]Binding{
	"admin": grants("admin",
		on(kmsg.ACLResourceTypeCluster, kmsg.ACLOperationAll),
		on(kmsg.ACLResourceTypeTopic, kmsg.ACLOperationAll),
		on(kmsg.ACLResourceTypeGroup, kmsg.ACLOperationAll),
		on(kmsg.ACLResourceTypeTransactionalId, kmsg.ACLOperationAll)),
	"operator": grants("operator",
		on(kmsg.ACLResourceTypeCluster, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs,
			kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationCreate),
		on(kmsg.ACLResourceTypeTopic, kmsg.ACLOperationCreate, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter,
			kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs),
		on(kmsg.ACLResourceTypeGroup, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete),
		on(kmsg.ACLResourceTypeTransactionalId, kmsg.ACLOperationDescribe)),
	"producer": grants("producer",
		on(kmsg.ACLResourceTypeTopic, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe, kmsg.ACLOperationCreate),
		on(kmsg.ACLResourceTypeTransactionalId, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe),
		on(kmsg.ACLResourceTypeCluster, kmsg.ACLOperationIdempotentWrite)),
	"consumer": grants("consumer",
		on(kmsg.ACLResourceTypeTopic, kmsg.ACLOperationRead, kmsg.ACLOperationDescribe),
		on(kmsg.ACLResourceTypeGroup, kmsg.ACLOperationRead, kmsg.ACLOperationDescribe)),
	"viewer": grants("viewer",
		on(kmsg.ACLResourceTypeCluster, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs),
		on(kmsg.ACLResourceTypeTopic, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs),
		on(kmsg.ACLResourceTypeGroup, kmsg.ACLOperationDescribe),
		on(kmsg.ACLResourceTypeTransactionalId, kmsg.ACLOperationDescribe)),
}

// BuiltinNames are the built-in roles, sorted.
var BuiltinNames = func() []string {
	var names []string
	for n := range Builtin { //floe:unordered sorted below
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}()

// builtinIndex holds every built-in grant, under its role's principal.
var builtinIndex = func() *Index {
	var all []Binding
	for _, n := range BuiltinNames {
		all = append(all, Builtin[n]...)
	}
	return NewIndex(all)
}()

type grant struct {
	rt  ResourceType
	ops []Operation
}

func on(rt ResourceType, ops ...Operation) grant { return grant{rt, ops} }

func grants(role string, gs ...grant) []Binding {
	var out []Binding
	for _, g := range gs {
		name := Wildcard
		if g.rt == kmsg.ACLResourceTypeCluster {
			name = ClusterName
		}
		for _, op := range g.ops {
			out = append(out, Binding{ResourceType: g.rt, ResourceName: name, PatternType: kmsg.ACLResourcePatternTypeLiteral,
				Principal: RolePrefix + role, Host: Wildcard, Operation: op, Permission: kmsg.ACLPermissionTypeAllow})
		}
	}
	slices.SortFunc(out, Compare)
	return out
}

// IsBuiltin reports whether name is a built-in role.
func IsBuiltin(name string) bool {
	_, ok := Builtin[name]
	return ok
}

// builtinApplies reports whether a built-in role's grants reach a
// resource: only admin's reach internal topics.
func builtinApplies(role string, rt ResourceType, name string) bool {
	return role == "admin" || rt != kmsg.ACLResourceTypeTopic || !strings.HasPrefix(name, "__")
}

// builtinGrant returns the built-in grant that allows q, if any.
func builtinGrant(q Request) *Binding {
	for _, role := range q.Roles {
		if !IsBuiltin(role) || !builtinApplies(role, q.ResourceType, q.ResourceName) {
			continue
		}
		var hit *Binding
		builtinIndex.visit(q.ResourceType, q.ResourceName, func(r *resourceACLs) bool {
			for i := range r.byPrincipal[RolePrefix+role] {
				if e := &r.byPrincipal[RolePrefix+role][i]; Implies(e.op, q.Operation) {
					hit = e.b
					return false
				}
			}
			return true
		})
		if hit != nil {
			return hit
		}
	}
	return nil
}

// builtinGrantAny is builtinGrant for AuthorizeAny: a grant of exactly the
// operation (or ALL) on the type.
func builtinGrantAny(q Request) *Binding {
	for _, role := range q.Roles {
		for i, b := range Builtin[role] {
			if b.ResourceType == q.ResourceType && (b.Operation == q.Operation || b.Operation == kmsg.ACLOperationAll) {
				return &Builtin[role][i]
			}
		}
	}
	return nil
}

// ValidateRoleName checks a role name: 1 to 128 characters from letters,
// digits, '.', '_' and '-'.
func ValidateRoleName(name string) error {
	if name == "" || len(name) > 128 {
		return fmt.Errorf("role name must be 1 to 128 characters, got %d", len(name))
	}
	for _, c := range name {
		ok := c == '.' || c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		if !ok {
			return fmt.Errorf("role name %q: only letters, digits, '.', '_' and '-' are allowed", name)
		}
	}
	return nil
}

func sortedNames(m map[string]*resourceACLs) []string {
	names := make([]string, 0, len(m))
	for n := range m { //floe:unordered sorted below
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
