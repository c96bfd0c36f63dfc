package acl

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The reference model: Kafka's rules read literally, scanning every binding
// for every request. The index must agree with it on every decision.

type model struct {
	bindings     []Binding
	superUsers   map[string]bool
	allowIfNoACL bool
}

func (m *model) resourceMatches(b Binding, rt ResourceType, name string) bool {
	if b.ResourceType != rt {
		return false
	}
	if b.PatternType == kmsg.ACLResourcePatternTypePrefixed {
		return strings.HasPrefix(name, b.ResourceName)
	}
	return b.ResourceName == name || b.ResourceName == "*"
}

func (m *model) principalMatches(b Binding, q Request) bool {
	if b.Principal == q.Principal || b.Principal == "User:*" {
		return true
	}
	for _, r := range q.Roles {
		if b.Principal == "Role:"+r {
			return true
		}
	}
	return false
}

func hostEqual(a, b string) bool {
	return a == b || (clientAddr(a).IsValid() && clientAddr(a) == clientAddr(b))
}

func (m *model) opMatches(b Binding, op Operation) bool {
	if b.Operation == kmsg.ACLOperationAll || b.Operation == op {
		return true
	}
	if b.Permission != kmsg.ACLPermissionTypeAllow {
		return false
	}
	switch op {
	case kmsg.ACLOperationDescribe:
		return b.Operation == kmsg.ACLOperationRead || b.Operation == kmsg.ACLOperationWrite ||
			b.Operation == kmsg.ACLOperationDelete || b.Operation == kmsg.ACLOperationAlter
	case kmsg.ACLOperationDescribeConfigs:
		return b.Operation == kmsg.ACLOperationAlterConfigs
	}
	return false
}

// builtinAllows is the built-in roles read from their definition.
func builtinAllows(q Request) bool {
	for _, r := range q.Roles {
		if r != "admin" && q.ResourceType == kmsg.ACLResourceTypeTopic && strings.HasPrefix(q.ResourceName, "__") {
			continue
		}
		for _, b := range Builtin[r] {
			if b.ResourceType == q.ResourceType && (b.ResourceName == "*" || b.ResourceName == q.ResourceName) &&
				(b.Operation == kmsg.ACLOperationAll || b.Operation == q.Operation ||
					(q.Operation == kmsg.ACLOperationDescribe && strings.Contains("READ WRITE DELETE ALTER", b.Operation.String())) ||
					(q.Operation == kmsg.ACLOperationDescribeConfigs && b.Operation == kmsg.ACLOperationAlterConfigs)) {
				return true
			}
		}
	}
	return false
}

func (m *model) authorize(q Request) bool {
	if m.superUsers[q.Principal] {
		return true
	}
	anyOnResource, allowed := false, false
	for _, b := range m.bindings {
		if !m.resourceMatches(b, q.ResourceType, q.ResourceName) {
			continue
		}
		anyOnResource = true
		if !m.principalMatches(b, q) || !(b.Host == "*" || hostEqual(b.Host, q.Host)) || !m.opMatches(b, q.Operation) {
			continue
		}
		if b.Permission == kmsg.ACLPermissionTypeDeny {
			return false
		}
		allowed = true
	}
	if allowed || builtinAllows(q) {
		return true
	}
	return !anyOnResource && m.allowIfNoACL
}

// authorizeAny is Kafka's default authorizeByResourceType, transcribed.
func (m *model) authorizeAny(q Request) bool {
	probe := q
	probe.ResourceName = "hardcode"
	if m.authorize(probe) {
		return true
	}
	denyLit, denyPre := map[string]bool{}, map[string]bool{}
	var allowLit, allowPre []string
	wildAllow := false
	for _, b := range m.bindings {
		if b.ResourceType != q.ResourceType || !(b.Host == "*" || hostEqual(b.Host, q.Host)) || !m.principalMatches(b, q) ||
			(b.Operation != q.Operation && b.Operation != kmsg.ACLOperationAll) {
			continue
		}
		lit := b.PatternType == kmsg.ACLResourcePatternTypeLiteral
		if b.Permission == kmsg.ACLPermissionTypeDeny {
			if lit && b.ResourceName == "*" {
				return false
			}
			if lit {
				denyLit[b.ResourceName] = true
			} else {
				denyPre[b.ResourceName] = true
			}
			continue
		}
		switch {
		case lit && b.ResourceName == "*":
			wildAllow = true
		case lit:
			allowLit = append(allowLit, b.ResourceName)
		default:
			allowPre = append(allowPre, b.ResourceName)
		}
	}
	for _, r := range q.Roles {
		for _, b := range Builtin[r] {
			if b.ResourceType == q.ResourceType && (b.Operation == q.Operation || b.Operation == kmsg.ACLOperationAll) {
				wildAllow = true
			}
		}
	}
	if wildAllow {
		return true
	}
	dominated := func(s string) bool {
		for i := 1; i <= len(s); i++ {
			if denyPre[s[:i]] {
				return true
			}
		}
		return false
	}
	for _, s := range allowLit {
		if !denyLit[s] && !dominated(s) {
			return true
		}
	}
	for _, s := range allowPre {
		if !dominated(s) {
			return true
		}
	}
	return false
}

// Small alphabets so that random bindings and requests collide often.
var (
	names      = []string{"a", "ab", "abc", "b", "ba", "*", "__x", "hardcode"}
	principals = []string{"User:alice", "User:bob", "User:*", "Role:ops", "Role:consumer", "Role:admin"}
	hosts      = []string{"*", "10.0.0.1", "10.0.0.2", "::1", "0:0:0:0:0:0:0:1"}
	roleSets   = [][]string{nil, {"ops"}, {"consumer"}, {"viewer", "ops"}, {"admin"}, {"producer"}, {"operator"}}
	rtypes     = []ResourceType{kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeTransactionalId, kmsg.ACLResourceTypeCluster}
)

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.Intn(len(xs))] }

func randomBinding(rng *rand.Rand) Binding {
	b := Binding{
		ResourceType: pick(rng, rtypes), ResourceName: pick(rng, names),
		PatternType: kmsg.ACLResourcePatternTypeLiteral, Principal: pick(rng, principals), Host: pick(rng, hosts),
		Operation:  Operation(2 + rng.Intn(13)),
		Permission: kmsg.ACLPermissionTypeAllow,
	}
	if b.ResourceType == kmsg.ACLResourceTypeCluster {
		b.ResourceName = ClusterName
	} else if rng.Intn(3) == 0 {
		b.PatternType = kmsg.ACLResourcePatternTypePrefixed
	}
	if rng.Intn(4) == 0 {
		b.Permission = kmsg.ACLPermissionTypeDeny
	}
	return b
}

func randomRequest(rng *rand.Rand) Request {
	q := Request{
		Principal: pick(rng, []string{"User:alice", "User:bob", "User:carol", "User:root"}), Roles: pick(rng, roleSets),
		Host: pick(rng, []string{"10.0.0.1", "10.0.0.2", "::1"}), ResourceType: pick(rng, rtypes),
		ResourceName: pick(rng, []string{"a", "ab", "abc", "abd", "b", "ba", "c", "*", "__x", "__consumer_offsets"}),
		Operation:    Operation(3 + rng.Intn(12)),
	}
	if q.ResourceType == kmsg.ACLResourceTypeCluster {
		q.ResourceName = ClusterName
	}
	return q
}

func TestAuthorizeAgreesWithTheModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	decisions := map[bool]int{}
	for round := 0; round < 3000; round++ {
		m := &model{superUsers: map[string]bool{"User:root": true}, allowIfNoACL: rng.Intn(2) == 0}
		for i, n := 0, rng.Intn(12); i < n; i++ {
			m.bindings = append(m.bindings, randomBinding(rng))
		}
		a := &Authorizer{ACLs: NewIndex(m.bindings), SuperUsers: m.superUsers, AllowIfNoACL: m.allowIfNoACL}
		for i := 0; i < 40; i++ {
			q := randomRequest(rng)
			want := m.authorize(q)
			got := a.Authorize(q)
			decisions[want]++
			if got.Allowed != want {
				t.Fatalf("round %d: %+v\nACLs %v\nallowIfNoACL %v: index says %v (%s %v), model says %v",
					round, q, m.bindings, m.allowIfNoACL, got.Allowed, got.Reason, got.Binding, want)
			}
			if got.Allowed && got.Reason != ReasonSuperUser && got.Reason != ReasonNoACLAllow && got.Binding == nil {
				t.Fatalf("an ALLOW by %q names no binding", got.Reason)
			}
			if wantAny := m.authorizeAny(q); a.AuthorizeAny(q).Allowed != wantAny {
				t.Fatalf("round %d: AuthorizeAny(%+v) over %v: index %v, model %v", round, q, m.bindings, !wantAny, wantAny)
			}
		}
	}
	// The property is only worth something if both answers came up often.
	if decisions[true] < 10000 || decisions[false] < 10000 {
		t.Fatalf("too one-sided to test anything: %v", decisions)
	}
}

func TestFilterAgreesWithTheModel(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	str := func(xs []string) *string {
		if rng.Intn(2) == 0 {
			return nil
		}
		s := pick(rng, xs)
		return &s
	}
	hits := 0
	for i := 0; i < 200000; i++ {
		b := randomBinding(rng)
		f := Filter{
			ResourceType: pick(rng, append([]ResourceType{kmsg.ACLResourceTypeAny}, rtypes...)), ResourceName: str(append(names, "abcd", ClusterName)),
			PatternType: PatternType(1 + rng.Intn(4)), Principal: str(principals), Host: str(hosts),
			Operation: Operation(1 + rng.Intn(14)), Permission: Permission(1 + rng.Intn(3)),
		}
		if rng.Intn(2) == 0 {
			f.Operation = kmsg.ACLOperationAny
		}
		if rng.Intn(2) == 0 {
			f.Permission = kmsg.ACLPermissionTypeAny
		}
		// Kafka's ResourcePatternFilter.matches and AccessControlEntryFilter.matches.
		want := (f.ResourceType == kmsg.ACLResourceTypeAny || f.ResourceType == b.ResourceType) &&
			(f.Principal == nil || *f.Principal == b.Principal) && (f.Host == nil || *f.Host == b.Host) &&
			(f.Operation == kmsg.ACLOperationAny || f.Operation == b.Operation) &&
			(f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == b.Permission)
		if want {
			switch {
			case f.PatternType != kmsg.ACLResourcePatternTypeAny && f.PatternType != kmsg.ACLResourcePatternTypeMatch && f.PatternType != b.PatternType:
				want = false
			case f.ResourceName == nil:
			case f.PatternType == kmsg.ACLResourcePatternTypeAny || f.PatternType == b.PatternType:
				want = *f.ResourceName == b.ResourceName
			case b.PatternType == kmsg.ACLResourcePatternTypeLiteral:
				want = *f.ResourceName == b.ResourceName || b.ResourceName == "*"
			default:
				want = strings.HasPrefix(*f.ResourceName, b.ResourceName)
			}
		}
		if got := f.Matches(b); got != want {
			t.Fatalf("filter %+v on %v: got %v, want %v", f, b, got, want)
		}
		if want {
			hits++
		}
	}
	if hits < 1000 {
		t.Fatalf("only %d matches: the test exercises little", hits)
	}
}
