package controller

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/node/acl"
)

// ACLs and roles in the metadata.
//
// State.ACLs is every ACL binding, sorted (acl.Compare) without duplicates;
// a binding with principal "Role:NAME" is a grant of role NAME. State.Roles
// holds the custom roles and the members of every role (built-in roles
// exist without an entry; an entry for one only holds its members). The
// derived index and the members' roles are rebuilt from these when they
// change, and on Restore.

// Role is a role's membership.
//
// Invariant: Name passes acl.ValidateRoleName; Members are valid
// principals, sorted, without duplicates.
type Role struct {
	Name    string   `json:"name"`
	Members []string `json:"members,omitempty"`
}

// RoleChange changes a role. Exactly one of Delete, Set, Add and Remove is
// in effect, in that order of precedence.
type RoleChange struct {
	Role string `json:"role"`
	// Delete removes a custom role, its members and its grants (every ACL
	// whose principal is Role:NAME). Built-in roles cannot be deleted.
	Delete bool `json:"delete,omitempty"`
	// Set replaces the members, creating a custom role that does not exist.
	Set *[]string `json:"set,omitempty"`
	// Add and Remove bind and unbind principals; the role must exist.
	Add    []string `json:"add,omitempty"`
	Remove []string `json:"remove,omitempty"`
}

// DeleteACLsResult is what each filter of a DeleteACLs command removed.
type DeleteACLsResult struct {
	Deleted [][]acl.Binding
}

// securityIndex is derived from ACLs and Roles.
type securityIndex struct {
	acls    *acl.Index          // nil: rebuild on next use
	roleOf  map[string][]string // principal -> role names, sorted; nil: rebuild
	version uint64              // bumped on every change to ACLs or roles
}

func (s *State) securityChanged() {
	s.sec.acls = nil
	s.sec.roleOf = nil
	s.sec.version++
}

// ACLIndex returns the ACLs arranged for authorization.
func (s *State) ACLIndex() *acl.Index {
	if s.sec.acls == nil {
		s.sec.acls = acl.NewIndex(s.ACLs)
	}
	return s.sec.acls
}

// SecurityVersion changes whenever the ACLs or roles change (callers that
// cache decisions compare it).
func (s *State) SecurityVersion() uint64 { return s.sec.version }

// RolesOf returns the names of the roles principal is bound to, sorted
// (a member "User:*" binds everyone).
func (s *State) RolesOf(principal string) []string {
	if s.sec.roleOf == nil {
		s.sec.roleOf = map[string][]string{}
		for _, name := range s.RoleNames() {
			r := s.Roles[name]
			if r == nil {
				continue
			}
			for _, m := range r.Members {
				s.sec.roleOf[m] = append(s.sec.roleOf[m], name)
			}
		}
	}
	own, all := s.sec.roleOf[principal], s.sec.roleOf[acl.WildcardPrincipal]
	if len(all) == 0 || principal == acl.WildcardPrincipal {
		return own
	}
	out := append(slices.Clone(own), all...)
	slices.Sort(out)
	return slices.Compact(out)
}

// RoleNames returns every role, built-in and custom, sorted.
func (s *State) RoleNames() []string {
	names := slices.Clone(acl.BuiltinNames)
	for n := range s.Roles { //floe:unordered sorted below
		if !acl.IsBuiltin(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// RoleMembers returns a role's members, and whether the role exists.
func (s *State) RoleMembers(name string) ([]string, bool) {
	r, ok := s.Roles[name]
	if !ok {
		return nil, acl.IsBuiltin(name)
	}
	return r.Members, true
}

// ValidateACLs checks bindings as Apply will.
func ValidateACLs(bs []acl.Binding) error {
	for _, b := range bs {
		if err := b.Validate(); err != nil {
			return withMessage(kerr.InvalidRequest, err.Error())
		}
	}
	return nil
}

func (s *State) createACLs(bs []acl.Binding) Result {
	if len(bs) == 0 {
		return Result{Err: kerr.InvalidRequest}
	}
	if err := ValidateACLs(bs); err != nil {
		return Result{Err: err}
	}
	all := append(slices.Clone(s.ACLs), bs...)
	slices.SortFunc(all, acl.Compare)
	s.ACLs = slices.CompactFunc(all, func(a, b acl.Binding) bool { return acl.Compare(a, b) == 0 })
	s.securityChanged()
	return Result{}
}

func (s *State) deleteACLs(fs []acl.Filter) Result {
	if len(fs) == 0 {
		return Result{Err: kerr.InvalidRequest}
	}
	for _, f := range fs {
		if err := f.Validate(); err != nil {
			return Result{Err: withMessage(kerr.InvalidRequest, err.Error())}
		}
	}
	res := &DeleteACLsResult{Deleted: make([][]acl.Binding, len(fs))}
	kept := s.ACLs[:0:0]
	for _, b := range s.ACLs {
		gone := false
		for i, f := range fs {
			if f.Matches(b) {
				// Reported under the first filter that matches it.
				res.Deleted[i] = append(res.Deleted[i], b)
				gone = true
				break
			}
		}
		if !gone {
			kept = append(kept, b)
		}
	}
	if len(kept) != len(s.ACLs) {
		s.ACLs = kept
		s.securityChanged()
	}
	return Result{DeletedACLs: res}
}

func (s *State) changeRole(c *RoleChange) Result {
	if err := acl.ValidateRoleName(c.Role); err != nil {
		return Result{Err: withMessage(kerr.InvalidRequest, err.Error())}
	}
	r, exists := s.Roles[c.Role]
	builtin := acl.IsBuiltin(c.Role)
	if c.Delete {
		if builtin {
			return Result{Err: withMessage(kerr.InvalidRequest, fmt.Sprintf("role %s is built in and cannot be deleted", c.Role))}
		}
		if !exists {
			return Result{Err: withMessage(kerr.ResourceNotFound, fmt.Sprintf("no role %s", c.Role))}
		}
		delete(s.Roles, c.Role)
		grantee := acl.RolePrefix + c.Role
		s.ACLs = slices.DeleteFunc(slices.Clone(s.ACLs), func(b acl.Binding) bool { return b.Principal == grantee })
		s.securityChanged()
		return Result{}
	}
	var members []string
	switch {
	case c.Set != nil:
		members = *c.Set
	case !exists && !builtin:
		return Result{Err: withMessage(kerr.ResourceNotFound, fmt.Sprintf("no role %s (create it first)", c.Role))}
	default:
		if r != nil {
			members = slices.Clone(r.Members)
		}
		members = append(members, c.Add...)
		members = slices.DeleteFunc(members, func(m string) bool { return slices.Contains(c.Remove, m) })
	}
	for _, m := range append(slices.Clone(members), c.Remove...) {
		if err := acl.ValidatePrincipal(m); err != nil {
			return Result{Err: withMessage(kerr.InvalidRequest, err.Error())}
		}
		if strings.HasPrefix(m, acl.RolePrefix) {
			return Result{Err: withMessage(kerr.InvalidRequest, fmt.Sprintf("%s: roles cannot be members of roles", m))}
		}
	}
	members = slices.Clone(members)
	slices.Sort(members)
	members = slices.Compact(members)
	if s.Roles == nil {
		s.Roles = map[string]*Role{}
	}
	if builtin && len(members) == 0 {
		delete(s.Roles, c.Role) // a built-in role exists without an entry
	} else {
		s.Roles[c.Role] = &Role{Name: c.Role, Members: members}
	}
	s.securityChanged()
	return Result{}
}

// validateSecurity checks a restored snapshot's ACLs and roles.
func (s *State) validateSecurity() error {
	for i, b := range s.ACLs {
		if err := b.Validate(); err != nil {
			return fmt.Errorf("acl %v: %v", b, err)
		}
		if i > 0 && acl.Compare(s.ACLs[i-1], b) >= 0 {
			return fmt.Errorf("acls not sorted and unique at %v", b)
		}
	}
	for name, r := range s.Roles { //floe:unordered validation only; the first error found is as good as any
		if r == nil || r.Name != name || acl.ValidateRoleName(name) != nil {
			return fmt.Errorf("role %q is malformed", name)
		}
	}
	return nil
}

// Error is a Kafka error with a message for the client.
type Error struct {
	Kafka   *kerr.Error
	Message string
}

func (e *Error) Error() string { return e.Kafka.Message + ": " + e.Message }
func (e *Error) Unwrap() error { return e.Kafka }

func withMessage(ke *kerr.Error, msg string) error { return &Error{Kafka: ke, Message: msg} }
