package controller

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
)

func binding(principal string, op acl.Operation, rt acl.ResourceType, name string) acl.Binding {
	return acl.Binding{ResourceType: rt, ResourceName: name, PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: principal, Host: "*", Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

func TestACLCommands(t *testing.T) {
	s := NewState("c")
	read := binding("User:alice", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t")
	write := binding("User:bob", kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "t")
	grp := binding("User:alice", kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, "g")
	mustApply(t, s, &Command{CreateACLs: []acl.Binding{write, read, grp}})
	mustApply(t, s, &Command{CreateACLs: []acl.Binding{read}}) // a duplicate is no change
	if len(s.ACLs) != 3 || !slices.IsSortedFunc(s.ACLs, acl.Compare) {
		t.Fatalf("acls %v", s.ACLs)
	}
	bad := read
	bad.Principal = "alice"
	if res := apply(t, s, &Command{CreateACLs: []acl.Binding{write, bad}}); res.Err == nil || len(s.ACLs) != 3 {
		t.Fatalf("a command with an invalid binding: %v, acls %v", res.Err, s.ACLs)
	}
	if s.ACLIndex().Len() != 3 {
		t.Fatalf("index holds %d", s.ACLIndex().Len())
	}

	// Each filter reports what it removed; a binding goes under the first.
	name := "t"
	topics := acl.Filter{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: &name, PatternType: kmsg.ACLResourcePatternTypeMatch,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	everything := acl.Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	res := mustApply(t, s, &Command{DeleteACLs: []acl.Filter{topics, everything}})
	if got := fmt.Sprint(res.DeletedACLs.Deleted); got != fmt.Sprint([][]acl.Binding{{read, write}, {grp}}) {
		t.Fatalf("deleted %s", got)
	}
	if len(s.ACLs) != 0 || s.ACLIndex().Len() != 0 {
		t.Fatalf("left %v", s.ACLs)
	}
	unknown := everything
	unknown.Operation = kmsg.ACLOperationUnknown
	if res := apply(t, s, &Command{DeleteACLs: []acl.Filter{unknown}}); res.Err == nil {
		t.Fatalf("a filter with an UNKNOWN field was applied")
	}
}

func TestRoleCommands(t *testing.T) {
	s := NewState("c")
	v0 := s.SecurityVersion()
	if res := apply(t, s, &Command{ChangeRole: &RoleChange{Role: "ops", Add: []string{"User:a"}}}); !errIs(res.Err, kerr.ResourceNotFound) {
		t.Fatalf("binding to a role that does not exist: %v", res.Err)
	}
	mustApply(t, s, &Command{ChangeRole: &RoleChange{Role: "ops", Set: &[]string{}}})
	mustApply(t, s, &Command{ChangeRole: &RoleChange{Role: "ops", Add: []string{"User:b", "User:a", "User:a"}}})
	mustApply(t, s, &Command{ChangeRole: &RoleChange{Role: "viewer", Add: []string{"User:*"}}})
	mustApply(t, s, &Command{CreateACLs: []acl.Binding{
		binding("Role:ops", kmsg.ACLOperationAlter, kmsg.ACLResourceTypeTopic, "t"),
		binding("User:a", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t")}})
	if s.SecurityVersion() == v0 {
		t.Fatalf("security version did not move")
	}
	if m, ok := s.RoleMembers("ops"); !ok || fmt.Sprint(m) != "[User:a User:b]" {
		t.Fatalf("ops members %v %v", m, ok)
	}
	if got := fmt.Sprint(s.RolesOf("User:a")); got != "[ops viewer]" {
		t.Fatalf("roles of User:a: %s", got)
	}
	if got := fmt.Sprint(s.RolesOf("User:z")); got != "[viewer]" {
		t.Fatalf("roles of User:z (User:* binds everyone to viewer): %s", got)
	}
	if got := fmt.Sprint(s.RoleNames()); got != "[admin consumer operator ops producer viewer]" {
		t.Fatalf("role names %s", got)
	}
	for _, bad := range []*RoleChange{
		{Role: "viewer", Delete: true},
		{Role: "bad name", Set: &[]string{}},
		{Role: "ops", Add: []string{"nocolon"}},
		{Role: "ops", Add: []string{"Role:viewer"}},
		{Role: "gone", Delete: true},
	} {
		before := s.Snapshot()
		if res := apply(t, s, &Command{ChangeRole: bad}); res.Err == nil || !bytes.Equal(before, s.Snapshot()) {
			t.Fatalf("%+v: %v", bad, res.Err)
		}
	}
	// Restore keeps roles and ACLs, and rebuilds what is derived.
	r, err := Restore(s.Snapshot())
	if err != nil || !bytes.Equal(r.Snapshot(), s.Snapshot()) || fmt.Sprint(r.RolesOf("User:b")) != "[ops viewer]" || r.ACLIndex().Len() != 2 {
		t.Fatalf("restored: %v", err)
	}
	// Deleting a role takes its grants and members with it.
	mustApply(t, s, &Command{ChangeRole: &RoleChange{Role: "ops", Delete: true}})
	if len(s.ACLs) != 1 || s.ACLs[0].Principal != "User:a" || fmt.Sprint(s.RolesOf("User:a")) != "[viewer]" {
		t.Fatalf("after delete: acls %v roles %v", s.ACLs, s.RolesOf("User:a"))
	}
	// Unbinding the last member of a built-in role leaves no entry.
	mustApply(t, s, &Command{ChangeRole: &RoleChange{Role: "viewer", Remove: []string{"User:*"}}})
	if len(s.Roles) != 0 {
		t.Fatalf("roles %v", s.Roles)
	}
	if _, err := Restore([]byte(`{"acls":[{"resource_type":2,"resource_name":"t","pattern_type":3,"principal":"nocolon","host":"*","operation":3,"permission":3}]}`)); err == nil {
		t.Fatalf("a snapshot with an invalid ACL restored")
	}
}

func errIs(err error, want *kerr.Error) bool {
	ce, ok := err.(*Error)
	return ok && ce.Kafka == want
}
