package ui

import (
	"context"
	"net/http"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-broker/floe/internal/kadmin"
)

type aclRow struct {
	Principal, Host, Resource, Name, Pattern, Operation, Permission string
}

type userRow struct {
	User       string
	Mechanisms []string // e.g. SCRAM-SHA-256
	Creds      string   // mechanisms with their iterations
}

type roleRow struct {
	Role    string
	Members string
	Builtin bool
}

type aclsData struct {
	ACLs     []aclRow
	Users    []userRow
	UsersErr string
	Roles    []roleRow
	RolesErr string
	// The forms, as typed when a change failed, else their defaults.
	ACLForm  aclForm
	UserForm userForm
	RoleForm roleForm
	// The forms' choices.
	Resources, Operations []string
}

// acls lists every ACL, SCRAM user and role, as DescribeAcls,
// DescribeUserScramCredentials and DescribeConfigs of the role resource
// show them to this session (all need DESCRIBE on the cluster: others get
// 403), with the forms that change them (security.go).
func (s *Server) acls(w http.ResponseWriter, r *http.Request, sess *session) {
	d, err := s.loadACLs(r, sess)
	if err != nil {
		s.failErr(w, r, sess, "ACLs", err)
		return
	}
	p := s.pageFor(sess, "acls", "Users and ACLs")
	p.Notice = securityNotices[r.URL.Query().Get("done")]
	p.Data = d
	s.render(w, http.StatusOK, "acls", p)
}

func (s *Server) loadACLs(r *http.Request, sess *session) (*aclsData, error) {
	d := &aclsData{ACLForm: aclForm{Resource: "TOPIC", Pattern: "LITERAL", Host: "*", Operation: "READ", Permission: "ALLOW"},
		UserForm: userForm{Mechanism: "SCRAM-SHA-256", Iterations: "4096"}, RoleForm: roleForm{Action: "create"},
		Resources: aclResourceNames, Operations: aclOperationNames}
	err := s.kafka(r, sess, func(ctx context.Context, cl *kgo.Client, adm *kadm.Client) error {
		if err := listACLs(ctx, adm, d); err != nil {
			return err
		}
		if err := listUsers(ctx, adm, d); err != nil {
			_, d.UsersErr = classify(err)
		}
		if err := listRoles(ctx, cl, d); err != nil {
			_, d.RolesErr = classify(err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

func listACLs(ctx context.Context, adm *kadm.Client, d *aclsData) error {
	every := kadm.NewACLs().AnyResource().Allow().Deny().AllowHosts().DenyHosts().
		ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny)
	res, err := adm.DescribeACLs(ctx, every)
	if err != nil {
		return err
	}
	for _, rr := range res {
		if rr.Err != nil {
			return rr.Err
		}
		for _, a := range rr.Described {
			d.ACLs = append(d.ACLs, aclRow{Principal: a.Principal, Host: a.Host, Resource: a.Type.String(), Name: a.Name,
				Pattern: a.Pattern.String(), Operation: a.Operation.String(), Permission: a.Permission.String()})
		}
	}
	sort.Slice(d.ACLs, func(i, j int) bool {
		a, b := d.ACLs[i], d.ACLs[j]
		return a.Principal+"\x00"+a.Resource+"\x00"+a.Name+"\x00"+a.Operation < b.Principal+"\x00"+b.Resource+"\x00"+b.Name+"\x00"+b.Operation
	})
	return nil
}

func listUsers(ctx context.Context, adm *kadm.Client, d *aclsData) error {
	users, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		return err
	}
	for _, u := range users.Sorted() {
		row := userRow{User: u.User}
		var cs []string
		for _, c := range u.CredInfos {
			row.Mechanisms = append(row.Mechanisms, c.Mechanism.String())
			cs = append(cs, c.String())
		}
		row.Creds = strings.Join(cs, ", ")
		d.Users = append(d.Users, row)
	}
	return nil
}

// listRoles reads every role and its members: DescribeConfigs of the role
// resource with an empty name answers one config per role.
func listRoles(ctx context.Context, cl *kgo.Client, d *aclsData) error {
	roles, err := kadmin.DescribeRole(ctx, cl, "")
	if err != nil {
		return err
	}
	for name, c := range roles {
		d.Roles = append(d.Roles, roleRow{Role: name, Members: strings.ReplaceAll(deref(c.Value), ",", ", "),
			Builtin: strings.HasPrefix(deref(c.Documentation), "built-in")})
	}
	sort.Slice(d.Roles, func(i, j int) bool { return d.Roles[i].Role < d.Roles[j].Role })
	return nil
}
