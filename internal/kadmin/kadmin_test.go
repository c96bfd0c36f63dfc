package kadmin

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
)

// TestRefusedWordsAndUnwraps: a code with a message reads "code: message",
// and errors.Is still sees the code; no code is a nil error.
func TestRefusedWordsAndUnwraps(t *testing.T) {
	msg := "no role etl"
	err := refused(kerr.ResourceNotFound, &msg)
	if !errors.Is(err, kerr.ResourceNotFound) || err.Error() != kerr.ResourceNotFound.Error()+": no role etl" {
		t.Fatalf("refused = %v", err)
	}
	if err := refused(kerr.ResourceNotFound, nil); err.Error() != kerr.ResourceNotFound.Error() {
		t.Fatalf("refused without a message = %q", err)
	}
	if err := refused(nil, &msg); err != nil {
		t.Fatalf("refused(nil) = %v, want nil", err)
	}
}

// TestACLRequestsCarryTheBinding: the creation and the exact delete filter
// of a binding carry every one of its fields.
func TestACLRequestsCarryTheBinding(t *testing.T) {
	b := acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "orders", PatternType: kmsg.ACLResourcePatternTypePrefixed,
		Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
	req := CreateACLsRequest([]acl.Binding{b})
	if len(req.Creations) != 1 {
		t.Fatalf("%d creations for 1 binding", len(req.Creations))
	}
	c := req.Creations[0]
	got := acl.Binding{ResourceType: c.ResourceType, ResourceName: c.ResourceName, PatternType: c.ResourcePatternType,
		Principal: c.Principal, Host: c.Host, Operation: c.Operation, Permission: c.PermissionType}
	if got != b {
		t.Fatalf("creation %+v, want %+v", got, b)
	}
	f := DeleteFilter(ExactFilter(b))
	if f.ResourceType != b.ResourceType || *f.ResourceName != b.ResourceName || f.ResourcePatternType != b.PatternType ||
		*f.Principal != b.Principal || *f.Host != b.Host || f.Operation != b.Operation || f.PermissionType != b.Permission {
		t.Fatalf("filter %+v does not match exactly %+v", f, b)
	}
}

// TestParseSCRAMMechanism takes the two mechanisms by their exact names.
func TestParseSCRAMMechanism(t *testing.T) {
	for s, want := range map[string]kadm.ScramMechanism{"SCRAM-SHA-256": kadm.ScramSha256, "SCRAM-SHA-512": kadm.ScramSha512} {
		if m, ok := ParseSCRAMMechanism(s); !ok || m != want {
			t.Fatalf("ParseSCRAMMechanism(%q) = %v, %v", s, m, ok)
		}
	}
	for _, s := range []string{"", "scram-sha-256", "PLAIN"} {
		if _, ok := ParseSCRAMMechanism(s); ok {
			t.Fatalf("ParseSCRAMMechanism(%q) took it", s)
		}
	}
}
