package acl

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// parse reads "User:alice ALLOW 10.0.0.1 READ TOPIC LITERAL orders" lines.
func parse(t testing.TB, lines ...string) []Binding {
	var out []Binding
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 7 {
			t.Fatalf("bad binding line %q", l)
		}
		perm, err1 := kmsg.ParseACLPermissionType(f[1])
		op, err2 := kmsg.ParseACLOperation(f[3])
		rt, err3 := kmsg.ParseACLResourceType(f[4])
		pt, err4 := kmsg.ParseACLResourcePatternType(f[5])
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			t.Fatalf("bad binding line %q", l)
		}
		b := Binding{Principal: f[0], Permission: perm, Host: f[2], Operation: op, ResourceType: rt, PatternType: pt, ResourceName: f[6]}
		if err := b.Validate(); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		out = append(out, b)
	}
	return out
}

func topicReq(principal, host string, op Operation, topic string, roles ...string) Request {
	return Request{Principal: principal, Roles: roles, Host: host, ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: topic, Operation: op}
}

// Kafka's rules, one scenario each.
func TestKafkaSemantics(t *testing.T) {
	const (
		read     = kmsg.ACLOperationRead
		write    = kmsg.ACLOperationWrite
		describe = kmsg.ACLOperationDescribe
		alter    = kmsg.ACLOperationAlter
	)
	a := &Authorizer{ACLs: NewIndex(parse(t,
		"User:alice ALLOW * READ TOPIC LITERAL orders",
		"User:alice DENY 10.0.0.9 READ TOPIC LITERAL orders",
		"User:bob ALLOW * WRITE TOPIC PREFIXED pay",
		"User:bob DENY * READ TOPIC PREFIXED pay",
		"User:* ALLOW * DESCRIBE TOPIC LITERAL *",
		"User:carol DENY * DESCRIBE TOPIC LITERAL secret",
	)), SuperUsers: map[string]bool{"User:root": true}}
	for _, tc := range []struct {
		q    Request
		want bool
		why  string
	}{
		{topicReq("User:alice", "10.0.0.1", read, "orders"), true, "literal allow"},
		{topicReq("User:alice", "10.0.0.9", read, "orders"), false, "deny from that host wins"},
		{topicReq("User:alice", "10.0.0.1", describe, "orders"), true, "READ implies DESCRIBE"},
		{topicReq("User:alice", "10.0.0.1", write, "orders"), false, "nothing allows WRITE and the topic has ACLs"},
		{topicReq("User:bob", "10.0.0.1", write, "payments"), true, "prefixed allow"},
		{topicReq("User:bob", "10.0.0.1", describe, "payments"), true, "WRITE implies DESCRIBE; a DENY of READ does not deny DESCRIBE"},
		{topicReq("User:bob", "10.0.0.1", read, "payments"), false, "prefixed deny"},
		{topicReq("User:bob", "10.0.0.1", write, "pa"), false, "a prefix longer than the name does not match"},
		{topicReq("User:carol", "10.0.0.1", describe, "anything"), true, "User:* on the wildcard"},
		{topicReq("User:carol", "10.0.0.1", describe, "secret"), false, "deny beats the wildcard allow"},
		{topicReq("User:root", "10.0.0.9", write, "secret"), true, "super user"},
		{topicReq("User:dave", "10.0.0.1", read, "elsewhere"), false, "ACLs exist on * so none is no-ACL"},
	} {
		if d := a.Authorize(tc.q); d.Allowed != tc.want {
			t.Errorf("%s: %+v -> %v (%s), want %v", tc.why, tc.q, d.Allowed, d.Reason, tc.want)
		}
	}

	// allow.everyone.if.no.acl.found: only for resources without any ACL.
	b := &Authorizer{ACLs: NewIndex(parse(t, "User:alice ALLOW * READ TOPIC LITERAL orders")), AllowIfNoACL: true}
	if !b.Authorize(topicReq("User:bob", "1.2.3.4", write, "other")).Allowed {
		t.Errorf("a topic without ACLs must be open with allow.everyone.if.no.acl.found")
	}
	if d := b.Authorize(topicReq("User:bob", "1.2.3.4", read, "orders")); d.Allowed || d.Reason != ReasonNoMatch {
		t.Errorf("a topic with ACLs for others must be closed: %+v", d)
	}
	b.AllowIfNoACL = false
	if d := b.Authorize(topicReq("User:bob", "1.2.3.4", write, "other")); d.Allowed || d.Reason != ReasonNoACLDeny {
		t.Errorf("allow.everyone.if.no.acl.found=false must deny: %+v", d)
	}
}

func TestRoles(t *testing.T) {
	a := &Authorizer{ACLs: NewIndex(parse(t,
		"Role:ops ALLOW * ALTER TOPIC PREFIXED app.",
		"Role:ops DENY * ALTER TOPIC LITERAL app.locked",
		"User:eve DENY * READ TOPIC LITERAL app.x",
	))}
	alter, read := kmsg.ACLOperationAlter, kmsg.ACLOperationRead
	for _, tc := range []struct {
		q    Request
		want bool
		why  string
	}{
		{topicReq("User:alice", "h", alter, "app.x", "ops"), true, "a role's grant reaches its members"},
		{topicReq("User:alice", "h", alter, "app.x"), false, "and nobody else"},
		{topicReq("User:alice", "h", alter, "app.locked", "ops"), false, "a role's DENY denies its members"},
		{topicReq("User:alice", "h", read, "app.x", "consumer"), true, "built-in consumer reads"},
		{topicReq("User:eve", "h", read, "app.x", "consumer"), false, "a user's DENY beats a built-in role"},
		{topicReq("User:alice", "h", read, "__audit_log", "consumer"), false, "built-in roles other than admin skip internal topics"},
		{topicReq("User:alice", "h", read, "__audit_log", "admin"), true, "admin reads internal topics"},
		{topicReq("User:alice", "h", kmsg.ACLOperationWrite, "app.x", "viewer"), false, "viewer does not write"},
	} {
		if d := a.Authorize(tc.q); d.Allowed != tc.want {
			t.Errorf("%s: %+v -> %v (%s), want %v", tc.why, tc.q, d.Allowed, d.Reason, tc.want)
		}
	}
	// A built-in role's grants are not ACLs on the resource: a topic
	// without ACLs stays open under allow.everyone.if.no.acl.found.
	a.AllowIfNoACL = true
	if d := a.Authorize(topicReq("User:alice", "h", kmsg.ACLOperationWrite, "fresh", "viewer")); !d.Allowed {
		t.Errorf("a topic without ACLs is closed by someone's built-in role: %+v", d)
	}
	op := Request{Principal: "User:o", Roles: []string{"operator"}, Host: "h", ResourceType: kmsg.ACLResourceTypeCluster, ResourceName: ClusterName}
	if bits := (&Authorizer{}).AuthorizedOps(op); bits&(1<<kmsg.ACLOperationAlter) != 0 || bits&(1<<kmsg.ACLOperationDescribe) == 0 {
		t.Errorf("operator's cluster operations: %b", bits)
	}
	for _, n := range BuiltinNames {
		for _, b := range Builtin[n] {
			if err := b.Validate(); err != nil || b.Permission != kmsg.ACLPermissionTypeAllow {
				t.Errorf("built-in %s: %v: %v", n, b, err)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	good := Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t", PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: "User:a", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for what, mut := range map[string]func(*Binding){
		"any type":         func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeAny },
		"unknown type":     func(b *Binding) { b.ResourceType = 42 },
		"user type":        func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeUser },
		"match pattern":    func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeMatch },
		"any op":           func(b *Binding) { b.Operation = kmsg.ACLOperationAny },
		"unknown op":       func(b *Binding) { b.Operation = 99 },
		"any permission":   func(b *Binding) { b.Permission = kmsg.ACLPermissionTypeAny },
		"empty name":       func(b *Binding) { b.ResourceName = "" },
		"cluster name":     func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeCluster },
		"principal":        func(b *Binding) { b.Principal = "alice" },
		"empty principal":  func(b *Binding) { b.Principal = "User:" },
		"empty host":       func(b *Binding) { b.Host = "" },
		"bad role":         func(b *Binding) { b.Principal = "Role:a b" },
		"separator in one": func(b *Binding) { b.Principal = "User:a;User:b" },
	} {
		b := good
		mut(&b)
		if err := b.Validate(); err == nil {
			t.Errorf("%s: %v accepted", what, b)
		}
	}
	for _, f := range []Filter{
		{ResourceType: 0, PatternType: 1, Operation: 1, Permission: 1},
		{ResourceType: 1, PatternType: 0, Operation: 1, Permission: 1},
		{ResourceType: 1, PatternType: 1, Operation: 0, Permission: 1},
		{ResourceType: 1, PatternType: 1, Operation: 1, Permission: 0},
		{ResourceType: 1, PatternType: 9, Operation: 1, Permission: 1},
	} {
		if f.Validate() == nil {
			t.Errorf("filter %+v with an UNKNOWN field accepted", f)
		}
	}
}

// BenchmarkAuthorize decides against 100,000 ACLs: one per user on its own
// topic, prefixed ones per team, and a wildcard DESCRIBE for everyone.
func BenchmarkAuthorize(b *testing.B) {
	var bs []Binding
	for i := 0; i < 100000; i++ {
		bs = append(bs, Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: fmt.Sprintf("t%d", i),
			PatternType: kmsg.ACLResourcePatternTypeLiteral, Principal: fmt.Sprintf("User:u%d", i), Host: "*",
			Operation: kmsg.ACLOperationWrite, Permission: kmsg.ACLPermissionTypeAllow})
		if i%100 == 0 {
			bs = append(bs, Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: fmt.Sprintf("team%d.", i/100),
				PatternType: kmsg.ACLResourcePatternTypePrefixed, Principal: fmt.Sprintf("User:u%d", i), Host: "*",
				Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow})
		}
	}
	a := &Authorizer{ACLs: NewIndex(bs)}
	q := topicReq("User:u777", "10.1.2.3", kmsg.ACLOperationWrite, "t777")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !a.Authorize(q).Allowed {
			b.Fatal("denied")
		}
	}
}
