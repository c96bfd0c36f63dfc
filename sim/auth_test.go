package sim

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSimAuth runs seeds with authentication and ACLs forced on (the
// default seeds of TestSim run them in about a third of their seeds).
func TestSimAuth(t *testing.T) {
	forEachSeed(t, 4, func(t *testing.T, seed int64) {
		res := Run(simOptions(seed).WithAuth())
		if testing.Verbose() || res.Failed() {
			t.Log(res.Summary())
		}
		if res.Failed() {
			t.Errorf("seed %d failed; last trace lines:\n\t%s", seed, strings.Join(res.TraceTail(60), "\n\t"))
		}
	})
}

// The same seed with authentication gives the same trace, SCRAM server
// nonces included (they come from each node's seeded generator, not from
// crypto/rand), and another seed other nonces.
func TestAuthSameSeedSameNonces(t *testing.T) {
	run := func(seed int64) (string, []string) {
		o := ChooseOptions(seed).WithAuth()
		o.TraceKeep = -1
		o.SafetyDur = time.Second
		res := Run(o)
		if res.Failed() {
			t.Fatalf("seed %d failed:\n%s", seed, res.Summary())
		}
		var nonces []string
		for _, l := range res.Trace {
			if _, after, ok := strings.Cut(l, "server-first r="); ok {
				nonces = append(nonces, strings.Split(after, ",")[0])
			}
		}
		return res.TraceHash, nonces
	}
	h1, n1 := run(7)
	h2, n2 := run(7)
	_, n3 := run(8)
	if h1 != h2 {
		t.Errorf("seed 7 gave two traces: %s and %s", h1, h2)
	}
	if len(n1) < 5 {
		t.Fatalf("only %d SCRAM exchanges traced", len(n1))
	}
	if !slices.Equal(n1, n2) {
		t.Errorf("seed 7 gave other nonces on its second run: %v vs %v", n1[:3], n2[:min(3, len(n2))])
	}
	seen := map[string]bool{}
	for _, n := range n1 {
		if seen[n] {
			t.Errorf("nonce %s used twice in one run", n)
		}
		seen[n] = true
	}
	for _, n := range n3 {
		if seen[n] {
			t.Errorf("seeds 7 and 8 share the nonce %s", n)
		}
	}
}

// modelAllows, one rule per case.
func TestACLModel(t *testing.T) {
	const (
		read, write, describe, all = kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe, kmsg.ACLOperationAll
		allow, deny                = kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny
		lit, pre                   = kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	)
	acl := func(p string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType, pt kmsg.ACLResourcePatternType, name string) simACL {
		return simACL{rt: kmsg.ACLResourceTypeTopic, principal: p, op: op, perm: perm, pattern: pt, name: name}
	}
	group := func(a simACL) simACL {
		a.rt = kmsg.ACLResourceTypeGroup
		return a
	}
	alice := "User:alice"
	for _, c := range []struct {
		why  string
		acls []simACL
		op   kmsg.ACLOperation
		want bool
	}{
		{"no ACL: closed", nil, read, false},
		{"literal allow", []simACL{acl(alice, read, allow, lit, "acl-a")}, read, true},
		{"another op", []simACL{acl(alice, read, allow, lit, "acl-a")}, write, false},
		{"another principal", []simACL{acl("User:bob", read, allow, lit, "acl-a")}, read, false},
		{"everyone", []simACL{acl("User:*", read, allow, lit, "acl-a")}, read, true},
		{"wildcard name", []simACL{acl(alice, write, allow, lit, "*")}, write, true},
		{"prefix", []simACL{acl(alice, write, allow, pre, "acl-")}, write, true},
		{"other prefix", []simACL{acl(alice, write, allow, pre, "acl-b")}, write, false},
		{"literal is not a prefix", []simACL{acl(alice, write, allow, lit, "acl-")}, write, false},
		{"READ implies DESCRIBE", []simACL{acl(alice, read, allow, lit, "acl-a")}, describe, true},
		{"WRITE implies DESCRIBE", []simACL{acl(alice, write, allow, pre, "a")}, describe, true},
		{"DESCRIBE implies nothing", []simACL{acl(alice, describe, allow, lit, "acl-a")}, read, false},
		{"ALL", []simACL{acl(alice, all, allow, lit, "acl-a")}, write, true},
		{"deny wins", []simACL{acl(alice, read, allow, lit, "acl-a"), acl(alice, read, deny, pre, "acl")}, read, false},
		{"deny wins, other order", []simACL{acl("User:*", read, deny, lit, "*"), acl(alice, all, allow, lit, "acl-a")}, read, false},
		{"deny ALL", []simACL{acl(alice, write, allow, lit, "acl-a"), acl(alice, all, deny, lit, "acl-a")}, write, false},
		{"deny READ leaves DESCRIBE", []simACL{acl(alice, read, allow, lit, "acl-a"), acl(alice, read, deny, lit, "acl-a")}, describe, true},
		{"deny of another op", []simACL{acl(alice, write, allow, lit, "acl-a"), acl(alice, read, deny, lit, "acl-a")}, write, true},
		{"a group's ACL is not the topic's", []simACL{group(acl(alice, all, allow, lit, "*"))}, read, false},
		{"a group's deny is not the topic's", []simACL{acl(alice, read, allow, lit, "acl-a"), group(acl(alice, all, deny, pre, "acl-"))}, read, true},
	} {
		if got := modelAllows(c.acls, alice, kmsg.ACLResourceTypeTopic, c.op, aclTopic); got != c.want {
			t.Errorf("%s: allowed=%v, want %v", c.why, got, c.want)
		}
	}
}
