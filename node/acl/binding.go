package acl

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The resource, pattern, operation and permission types are Kafka's wire
// enums (kmsg), so a binding travels between the wire, the controller log
// (json.go) and the index without translation.
type (
	ResourceType = kmsg.ACLResourceType
	PatternType  = kmsg.ACLResourcePatternType
	Operation    = kmsg.ACLOperation
	Permission   = kmsg.ACLPermissionType
)

// Names Kafka gives special meaning.
const (
	// ClusterName is the only name of the CLUSTER resource.
	ClusterName = "kafka-cluster"
	// Wildcard, as a LITERAL resource name, matches every name; as a host,
	// every host.
	Wildcard = "*"
	// WildcardPrincipal matches every principal.
	WildcardPrincipal = "User:*"
	// Anonymous is the principal of an unauthenticated client.
	Anonymous = "User:ANONYMOUS"
	// RolePrefix starts the principal that binds ACLs to a role.
	RolePrefix = "Role:"
)

// Binding is one ACL: who (principal, host) may or may not (permission) do
// what (operation) to which resources (type, name, pattern).
//
// Invariant (of every stored binding, see Validate): a supported resource
// type, LITERAL or PREFIXED, a concrete operation (not ANY), ALLOW or DENY,
// a non-empty name ("kafka-cluster" for CLUSTER), a principal "Type:name"
// and a non-empty host.
type Binding struct {
	ResourceType ResourceType
	ResourceName string
	PatternType  PatternType
	Principal    string
	Host         string
	Operation    Operation
	Permission   Permission
}

// String renders a binding as kafka-acls does, for logs and audit records.
func (b Binding) String() string {
	return fmt.Sprintf("%s %s from %s %s on %s:%s:%s", b.Principal, b.Permission, b.Host, b.Operation,
		b.ResourceType, b.PatternType, b.ResourceName)
}

// Validate applies Kafka's rules for a new ACL (AclControlManager and
// AclApis): the error says which field is wrong. Floe serves the resource
// types of the Kafka APIs it implements: TOPIC, GROUP, CLUSTER and
// TRANSACTIONAL_ID.
func (b Binding) Validate() error {
	switch b.ResourceType {
	case kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster, kmsg.ACLResourceTypeTransactionalId:
	case kmsg.ACLResourceTypeDelegationToken, kmsg.ACLResourceTypeUser:
		return fmt.Errorf("resource type %s is not supported (Floe has no delegation tokens)", b.ResourceType)
	default:
		return fmt.Errorf("invalid resource type %s (%d)", b.ResourceType, int8(b.ResourceType))
	}
	switch b.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed:
	default:
		return fmt.Errorf("invalid pattern type %s (%d): an ACL is LITERAL or PREFIXED", b.PatternType, int8(b.PatternType))
	}
	if b.Operation <= kmsg.ACLOperationAny || b.Operation > kmsg.ACLOperationDescribeTokens {
		return fmt.Errorf("invalid operation %s (%d)", b.Operation, int8(b.Operation))
	}
	if b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny {
		return fmt.Errorf("invalid permission type %s (%d): an ACL is ALLOW or DENY", b.Permission, int8(b.Permission))
	}
	if b.ResourceName == "" {
		return fmt.Errorf("invalid empty resource name")
	}
	if b.ResourceType == kmsg.ACLResourceTypeCluster && b.ResourceName != ClusterName {
		return fmt.Errorf("the only valid name for the CLUSTER resource is %s", ClusterName)
	}
	if err := ValidatePrincipal(b.Principal); err != nil {
		return err
	}
	if b.Host == "" {
		return fmt.Errorf("invalid empty host (use * for every host)")
	}
	if strings.HasPrefix(b.Principal, RolePrefix) {
		if err := ValidateRoleName(strings.TrimPrefix(b.Principal, RolePrefix)); err != nil {
			return err
		}
	}
	return nil
}

// ValidatePrincipal checks the "Type:name" form Kafka parses principals in.
func ValidatePrincipal(p string) error {
	typ, name, ok := strings.Cut(p, ":")
	if !ok {
		return fmt.Errorf("could not parse principal %q (no colon is present separating the principal type from the principal name)", p)
	}
	if typ == "" || name == "" {
		return fmt.Errorf("could not parse principal %q (empty type or name)", p)
	}
	if strings.ContainsAny(p, ",;\n") {
		return fmt.Errorf("principal %q contains a separator (, ; or a newline)", p)
	}
	return nil
}

// Compare orders bindings canonically (resource, then entry), the order
// the controller stores and DescribeAcls lists them in.
func Compare(a, b Binding) int {
	if c := cmp.Compare(a.ResourceType, b.ResourceType); c != 0 {
		return c
	}
	if c := cmp.Compare(a.PatternType, b.PatternType); c != 0 {
		return c
	}
	if c := strings.Compare(a.ResourceName, b.ResourceName); c != 0 {
		return c
	}
	if c := strings.Compare(a.Principal, b.Principal); c != 0 {
		return c
	}
	if c := strings.Compare(a.Host, b.Host); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Operation, b.Operation); c != 0 {
		return c
	}
	return cmp.Compare(a.Permission, b.Permission)
}

// Filter selects bindings, as DescribeAcls and DeleteAcls do. A nil name,
// principal or host matches any; ANY matches any value of its field.
//
// Pattern types: ANY matches every stored pattern type, and with a name only
// bindings of exactly that name; LITERAL and PREFIXED match bindings of that
// type (and name, if given); MATCH matches every binding that applies to the
// named resource: the same LITERAL name, the LITERAL "*", and every
// PREFIXED name the resource name starts with.
type Filter struct {
	ResourceType ResourceType
	ResourceName *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Validate rejects filters with UNKNOWN (or out of range) fields, as Kafka
// does before matching anything.
func (f Filter) Validate() error {
	if f.ResourceType <= kmsg.ACLResourceTypeUnknown || f.ResourceType > kmsg.ACLResourceTypeUser {
		return fmt.Errorf("filter has an UNKNOWN resource type (%d)", int8(f.ResourceType))
	}
	if f.PatternType <= kmsg.ACLResourcePatternTypeUnknown || f.PatternType > kmsg.ACLResourcePatternTypePrefixed {
		return fmt.Errorf("filter has an UNKNOWN pattern type (%d)", int8(f.PatternType))
	}
	if f.Operation <= kmsg.ACLOperationUnknown || f.Operation > kmsg.ACLOperationDescribeTokens {
		return fmt.Errorf("filter has an UNKNOWN operation (%d)", int8(f.Operation))
	}
	if f.Permission <= kmsg.ACLPermissionTypeUnknown || f.Permission > kmsg.ACLPermissionTypeAllow {
		return fmt.Errorf("filter has an UNKNOWN permission type (%d)", int8(f.Permission))
	}
	return nil
}

// Matches reports whether the filter selects b (Kafka's AclBindingFilter).
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	if !f.matchesPattern(b) {
		return false
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == b.Permission
}

func (f Filter) matchesPattern(b Binding) bool {
	switch f.PatternType {
	case kmsg.ACLResourcePatternTypeAny:
	case kmsg.ACLResourcePatternTypeMatch:
		if f.ResourceName == nil {
			return true
		}
		name := *f.ResourceName
		if b.PatternType == kmsg.ACLResourcePatternTypePrefixed {
			return strings.HasPrefix(name, b.ResourceName)
		}
		return b.ResourceName == name || b.ResourceName == Wildcard
	default:
		if f.PatternType != b.PatternType {
			return false
		}
	}
	return f.ResourceName == nil || *f.ResourceName == b.ResourceName
}

// Implies reports whether an ALLOW of op also allows want (KIP-253): READ,
// WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies
// DESCRIBE_CONFIGS; ALL implies everything.
func Implies(op, want Operation) bool {
	if op == want || op == kmsg.ACLOperationAll {
		return true
	}
	switch want {
	case kmsg.ACLOperationDescribe:
		switch op {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return op == kmsg.ACLOperationAlterConfigs
	}
	return false
}

// Operations lists, per resource type, the operations Kafka reports in
// authorized-operations bitfields (AclEntry.supportedOperations).
var Operations = map[ResourceType][]Operation{
	kmsg.ACLResourceTypeTopic: {kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate,
		kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs},
	kmsg.ACLResourceTypeGroup: {kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete},
	kmsg.ACLResourceTypeCluster: {kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe},
	kmsg.ACLResourceTypeTransactionalId: {kmsg.ACLOperationDescribe, kmsg.ACLOperationWrite},
}
