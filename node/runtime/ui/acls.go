package ui

import (
	"context"
	"net/http"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

type aclRow struct {
	Principal, Host, Resource, Name, Pattern, Operation, Permission string
}

type userRow struct {
	User, Mechanisms string
}

type aclsData struct {
	ACLs     []aclRow
	Users    []userRow
	UsersErr string
}

// acls lists every ACL and SCRAM user, as DescribeAcls and
// DescribeUserScramCredentials show them to this session (both need
// DESCRIBE on the cluster: others get 403).
func (s *Server) acls(w http.ResponseWriter, r *http.Request, sess *session) {
	var d aclsData
	err := s.admin(r, sess, func(ctx context.Context, adm *kadm.Client) error {
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
		users, err := adm.DescribeUserSCRAMs(ctx)
		if err != nil {
			_, d.UsersErr = classify(err)
			return nil
		}
		for _, u := range users.Sorted() {
			var ms []string
			for _, c := range u.CredInfos {
				ms = append(ms, c.String())
			}
			d.Users = append(d.Users, userRow{User: u.User, Mechanisms: strings.Join(ms, ", ")})
		}
		return nil
	})
	if err != nil {
		s.failErr(w, r, sess, "ACLs", err)
		return
	}
	p := s.pageFor(sess, "acls", "Users and ACLs")
	p.Data = d
	s.render(w, http.StatusOK, "acls", p)
}
