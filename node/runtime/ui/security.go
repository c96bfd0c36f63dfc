package ui

// Changes to users, ACLs and roles from the "Users and ACLs" page. Each is
// one Kafka request sent as the session's user (AlterUserScramCredentials,
// CreateAcls, DeleteAcls, IncrementalAlterConfigs of a role resource), so
// the broker authorizes it (ALTER on the cluster, as Kafka requires) and
// audits it exactly as it does the same request from any other client.
// The form is validated here first: bad input is answered 400 with the
// page and the form as typed, and no request is sent.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/internal/kadmin"
	"github.com/floe-broker/floe/node/acl"
)

// aclForm is the ACL form as typed (kept when it is shown again).
type aclForm struct {
	Resource, Name, Pattern, Principal, Host, Operation, Permission string
}

// userForm is the SCRAM user form; the password is never shown again.
type userForm struct {
	User, Mechanism, Iterations string
}

// roleForm is the role form.
type roleForm struct {
	Role, Members, Action string
}

// aclResources, aclPatterns, aclOperations and aclPermissions are the
// choices the ACL form offers, by their form value: concrete values only
// (no ANY or MATCH filter, no UNKNOWN), as CreateAcls takes them.
var (
	aclResources = map[string]kmsg.ACLResourceType{"TOPIC": kmsg.ACLResourceTypeTopic, "GROUP": kmsg.ACLResourceTypeGroup,
		"CLUSTER": kmsg.ACLResourceTypeCluster, "TRANSACTIONAL_ID": kmsg.ACLResourceTypeTransactionalId,
		"DELEGATION_TOKEN": kmsg.ACLResourceTypeDelegationToken}
	aclPatterns    = map[string]kmsg.ACLResourcePatternType{"LITERAL": kmsg.ACLResourcePatternTypeLiteral, "PREFIXED": kmsg.ACLResourcePatternTypePrefixed}
	aclPermissions = map[string]kmsg.ACLPermissionType{"ALLOW": kmsg.ACLPermissionTypeAllow, "DENY": kmsg.ACLPermissionTypeDeny}
	aclOperations  = map[string]kmsg.ACLOperation{"ALL": kmsg.ACLOperationAll, "READ": kmsg.ACLOperationRead,
		"WRITE": kmsg.ACLOperationWrite, "CREATE": kmsg.ACLOperationCreate, "DELETE": kmsg.ACLOperationDelete,
		"ALTER": kmsg.ACLOperationAlter, "DESCRIBE": kmsg.ACLOperationDescribe, "CLUSTER_ACTION": kmsg.ACLOperationClusterAction,
		"DESCRIBE_CONFIGS": kmsg.ACLOperationDescribeConfigs, "ALTER_CONFIGS": kmsg.ACLOperationAlterConfigs,
		"IDEMPOTENT_WRITE": kmsg.ACLOperationIdempotentWrite, "CREATE_TOKENS": kmsg.ACLOperationCreateTokens,
		"DESCRIBE_TOKENS": kmsg.ACLOperationDescribeTokens}
)

// The form's option lists, in the order the page shows them.
var (
	aclResourceNames  = []string{"TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN"}
	aclOperationNames = []string{"READ", "WRITE", "DESCRIBE", "CREATE", "DELETE", "ALTER", "DESCRIBE_CONFIGS", "ALTER_CONFIGS",
		"IDEMPOTENT_WRITE", "CLUSTER_ACTION", "CREATE_TOKENS", "DESCRIBE_TOKENS", "ALL"}
)

func readACLForm(r *http.Request) aclForm {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	f := aclForm{Resource: strings.ToUpper(v("resource")), Name: v("name"), Pattern: strings.ToUpper(v("pattern")),
		Principal: v("principal"), Host: v("host"), Operation: strings.ToUpper(v("operation")), Permission: strings.ToUpper(v("permission"))}
	if f.Host == "" {
		f.Host = "*"
	}
	return f
}

// parse validates the form into one binding.
func (f aclForm) parse() (acl.Binding, error) {
	var b acl.Binding
	var ok bool
	if b.ResourceType, ok = aclResources[f.Resource]; !ok {
		return b, badf("resource type %q: want one of %s", f.Resource, strings.Join(aclResourceNames, ", "))
	}
	if b.PatternType, ok = aclPatterns[f.Pattern]; !ok {
		return b, badf("pattern type %q: want LITERAL or PREFIXED", f.Pattern)
	}
	if b.Operation, ok = aclOperations[f.Operation]; !ok {
		return b, badf("operation %q: want one of %s", f.Operation, strings.Join(aclOperationNames, ", "))
	}
	if b.Permission, ok = aclPermissions[f.Permission]; !ok {
		return b, badf("permission %q: want ALLOW or DENY", f.Permission)
	}
	b.ResourceName, b.Principal, b.Host = f.Name, f.Principal, f.Host
	switch {
	case b.ResourceType == kmsg.ACLResourceTypeCluster && b.ResourceName != "kafka-cluster":
		return b, badf("a CLUSTER ACL names the resource kafka-cluster, got %q", b.ResourceName)
	case b.ResourceType == kmsg.ACLResourceTypeCluster && b.PatternType != kmsg.ACLResourcePatternTypeLiteral:
		return b, badf("a CLUSTER ACL is LITERAL")
	case !printableLen(b.ResourceName, 1, 255):
		return b, badf("resource name %q: want 1 to 255 printable characters (* for every resource)", b.ResourceName)
	case !printableLen(b.Host, 1, 255):
		return b, badf("host %q: want an IP address or * (any host)", b.Host)
	}
	if err := checkPrincipal(b.Principal); err != nil {
		return b, err
	}
	return b, nil
}

// checkPrincipal takes what the broker's ACLs take: TYPE:NAME, e.g.
// User:alice, Role:etl or User:*.
func checkPrincipal(p string) error {
	if !printableLen(p, 3, 255) {
		return badf("principal %q: want TYPE:NAME, e.g. User:alice, of at most 255 printable characters", p)
	}
	if err := acl.ValidatePrincipal(p); err != nil {
		return badf("principal: %v", err)
	}
	return nil
}

func printableLen(s string, lo, hi int) bool {
	return len(s) >= lo && len(s) <= hi && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

// createACL sends CreateAcls with the one binding.
func createACL(ctx context.Context, cl *kgo.Client, b acl.Binding) error {
	req := kadmin.CreateACLsRequest([]acl.Binding{b})
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Results) != 1 {
		return fmt.Errorf("CreateAcls answered %d results for 1 creation", len(resp.Results))
	}
	return withMessage(kerr.ErrorForCode(resp.Results[0].ErrorCode), deref(resp.Results[0].ErrorMessage))
}

// errNoSuchACL: DeleteAcls matched nothing (someone else deleted it).
var errNoSuchACL = errors.New("no such ACL (already deleted?)")

// deleteACL sends DeleteAcls with a filter that matches exactly the one
// binding (every field given, the pattern type not MATCH).
func deleteACL(ctx context.Context, cl *kgo.Client, b acl.Binding) error {
	req := kmsg.NewPtrDeleteACLsRequest()
	req.Filters = append(req.Filters, kadmin.DeleteFilter(kadmin.ExactFilter(b)))
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Results) != 1 {
		return fmt.Errorf("DeleteAcls answered %d results for 1 filter", len(resp.Results))
	}
	res := resp.Results[0]
	if err := withMessage(kerr.ErrorForCode(res.ErrorCode), deref(res.ErrorMessage)); err != nil {
		return err
	}
	for _, m := range res.MatchingACLs {
		if err := withMessage(kerr.ErrorForCode(m.ErrorCode), deref(m.ErrorMessage)); err != nil {
			return err
		}
	}
	if len(res.MatchingACLs) == 0 {
		return errNoSuchACL
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// addACL creates one ACL binding.
func (s *Server) addACL(w http.ResponseWriter, r *http.Request, sess *session) {
	f := readACLForm(r)
	b, err := f.parse()
	if err == nil {
		err = s.kafka(r, sess, func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) error { return createACL(ctx, cl, b) })
	}
	s.securityDone(w, r, sess, err, "creating the ACL", "acl-created", func(d *aclsData) { d.ACLForm = f })
}

// removeACL deletes one ACL binding (the table's Delete button).
func (s *Server) removeACL(w http.ResponseWriter, r *http.Request, sess *session) {
	f := readACLForm(r)
	b, err := f.parse()
	if err == nil {
		err = s.kafka(r, sess, func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) error { return deleteACL(ctx, cl, b) })
	}
	s.securityDone(w, r, sess, err, "deleting the ACL", "acl-deleted", nil)
}

func readUserForm(r *http.Request) userForm {
	return userForm{User: strings.TrimSpace(r.PostFormValue("user")), Mechanism: strings.TrimSpace(r.PostFormValue("mechanism")),
		Iterations: strings.TrimSpace(r.PostFormValue("iterations"))}
}

// checkUserName refuses what SCRAM cannot carry (a comma or = would be
// escaped on the wire by a client, and the login form refuses them too).
func checkUserName(u string) error {
	if !printableLen(u, 1, 255) || strings.ContainsAny(u, ",=") {
		return badf("user name %q: want 1 to 255 printable characters, no comma or equals sign", u)
	}
	return nil
}

// addUser creates a SCRAM user, or sets a new password for an existing
// one's mechanism (AlterUserScramCredentials upserts, as Kafka's does).
func (s *Server) addUser(w http.ResponseWriter, r *http.Request, sess *session) {
	f := readUserForm(r)
	pass := r.PostFormValue("password")
	mech, ok := kadmin.ParseSCRAMMechanism(f.Mechanism)
	err := checkUserName(f.User)
	switch {
	case err != nil:
	case !ok:
		err = badf("mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", f.Mechanism)
	case pass == "" || len(pass) > 1024:
		err = badf("password: want 1 to 1024 characters")
	}
	var iters int64
	if err == nil {
		iters, err = parseInt("iterations", f.Iterations, kadmin.SCRAMIterationsMin, kadmin.SCRAMIterationsMax)
	}
	if err == nil {
		err = s.admin(r, sess, func(ctx context.Context, adm *kadm.Client) error {
			return kadmin.UpsertSCRAM(ctx, adm, f.User, pass, int32(iters), []kadm.ScramMechanism{mech})
		})
	}
	s.securityDone(w, r, sess, err, "saving user "+f.User, "user-saved", func(d *aclsData) { d.UserForm = f })
}

// removeUser deletes one mechanism's credential of a user.
func (s *Server) removeUser(w http.ResponseWriter, r *http.Request, sess *session) {
	f := readUserForm(r)
	mech, ok := kadmin.ParseSCRAMMechanism(f.Mechanism)
	err := checkUserName(f.User)
	if err == nil && !ok {
		err = badf("mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", f.Mechanism)
	}
	if err == nil {
		err = s.admin(r, sess, func(ctx context.Context, adm *kadm.Client) error {
			return kadmin.DeleteSCRAM(ctx, adm, f.User, []kadm.ScramMechanism{mech})
		})
	}
	s.securityDone(w, r, sess, err, "deleting "+f.Mechanism+" of user "+f.User, "user-deleted", nil)
}

// roleOps are the role form's actions and the IncrementalAlterConfigs
// operation on members each sends.
var roleOps = map[string]kmsg.IncrementalAlterConfigOp{"create": kmsg.IncrementalAlterConfigOpSet,
	"bind": kmsg.IncrementalAlterConfigOpAppend, "unbind": kmsg.IncrementalAlterConfigOpSubtract,
	"delete": kmsg.IncrementalAlterConfigOpDelete}

// changeRole creates, binds, unbinds or deletes a role.
func (s *Server) changeRole(w http.ResponseWriter, r *http.Request, sess *session) {
	f := roleForm{Role: strings.TrimSpace(r.PostFormValue("role")), Members: strings.TrimSpace(r.PostFormValue("members")),
		Action: r.PostFormValue("action")}
	members, err := parseRoleForm(f)
	if err == nil {
		err = s.kafka(r, sess, func(ctx context.Context, cl *kgo.Client, _ *kadm.Client) error {
			return kadmin.AlterRole(ctx, cl, f.Role, roleOps[f.Action], members)
		})
	}
	s.securityDone(w, r, sess, err, f.Action+" role "+f.Role, "role-"+f.Action, func(d *aclsData) { d.RoleForm = f })
}

// parseRoleForm validates the role form and returns its members.
func parseRoleForm(f roleForm) ([]string, error) {
	op, ok := roleOps[f.Action]
	if !ok {
		return nil, badf("action %q: want create, bind, unbind or delete", f.Action)
	}
	if err := acl.ValidateRoleName(f.Role); err != nil {
		return nil, badf("%v", err)
	}
	var members []string
	for _, m := range strings.Split(f.Members, ",") {
		if m = strings.TrimSpace(m); m == "" {
			continue
		}
		if err := checkPrincipal(m); err != nil {
			return nil, err
		}
		members = append(members, m)
	}
	if (op == kmsg.IncrementalAlterConfigOpAppend || op == kmsg.IncrementalAlterConfigOpSubtract) && len(members) == 0 {
		return nil, badf("%s needs at least one principal, e.g. User:alice", f.Action)
	}
	if op == kmsg.IncrementalAlterConfigOpDelete && len(members) > 0 {
		return nil, badf("delete takes no members (it unbinds them all)")
	}
	return members, nil
}

// securityNotices are the notices of the changes, by the done= value the
// redirect carries.
var securityNotices = map[string]string{"acl-created": "ACL created.", "acl-deleted": "ACL deleted.",
	"user-saved": "User saved.", "user-deleted": "User credential deleted.", "role-create": "Role saved.",
	"role-bind": "Principals bound to the role.", "role-unbind": "Principals unbound from the role.", "role-delete": "Role deleted."}

// securityDone answers a change: on success a redirect to the page with
// its notice; on error the page again, with the error, the status the
// error maps to, and (keep) the form as typed.
func (s *Server) securityDone(w http.ResponseWriter, r *http.Request, sess *session, err error, what, done string, keep func(*aclsData)) {
	if err == nil {
		http.Redirect(w, r, "/acls?done="+done, http.StatusSeeOther)
		return
	}
	status, msg := classify(err)
	if errors.Is(err, errNoSuchACL) {
		status, msg = http.StatusNotFound, err.Error()
	}
	if status == http.StatusUnauthorized {
		s.failErr(w, r, sess, what, err)
		return
	}
	d, lerr := s.loadACLs(r, sess)
	if lerr != nil { // e.g. the user may not describe ACLs either
		s.fail(w, r, sess, status, what+": "+msg)
		return
	}
	if keep != nil {
		keep(d)
	}
	p := s.pageFor(sess, "acls", "Users and ACLs")
	p.Data, p.Error = d, what+": "+msg
	s.render(w, status, "acls", p)
}
