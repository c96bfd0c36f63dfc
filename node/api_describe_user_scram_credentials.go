package node

// DescribeUserScramCredentials (key 50), version 0 (KIP-554).
//
// Lists users' SCRAM credentials as the applied metadata holds them: for
// each, its mechanisms and iteration counts, never a salt or a key. A null
// or empty user list means every user, sorted by name; otherwise one
// result per distinct name in request order, RESOURCE_NOT_FOUND for a user
// without credentials and DUPLICATE_RESOURCE for a name given twice (as
// Kafka answers). Who may call it is the authorizer's business (Describe on
// the cluster, in Kafka).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func serveDescribeUserScramCredentials(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !r.authorize(c, req).cluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode = errClusterAuth.Code
		respond(resp)
		return
	}
	st := r.ctl.state
	var names []string
	if len(req.Users) == 0 {
		names = st.UserNames()
	} else {
		for _, u := range req.Users {
			names = append(names, u.Name)
		}
	}
	count := map[string]int{}
	for _, n := range names {
		count[n]++
	}
	done := map[string]bool{}
	for _, name := range names {
		if done[name] {
			continue
		}
		done[name] = true
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = name
		u, ok := st.Users[name]
		switch {
		case count[name] > 1:
			res.ErrorCode = kerr.DuplicateResource.Code
			res.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("user %q is named more than once in the request", name))
		case !ok:
			res.ErrorCode = kerr.ResourceNotFound.Code
			res.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("user %q has no SCRAM credential", name))
		default:
			for _, c := range u.Scram {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = c.Mechanism, c.Iterations
				res.CredentialInfos = append(res.CredentialInfos, ci)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	respond(resp)
}
