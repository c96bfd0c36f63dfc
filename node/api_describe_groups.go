package node

// DescribeGroups (key 15), versions 0-5: each group described by its
// coordinator (group/admin.go), or NOT_COORDINATOR /
// COORDINATOR_LOAD_IN_PROGRESS for groups this broker does not serve. v3
// adds authorized operations (all allowed: no ACLs yet), v4 instance ids;
// v6 (error messages, GROUP_ID_NOT_FOUND for unknown groups) is not
// advertised. A share group is described with protocol type "share" and
// its members (share_list.go).

import "github.com/twmb/franz-go/pkg/kmsg"

// Authorization: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED); the
// authorized operations (v3+, when asked) are the client's on the group.
func serveDescribeGroups(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	az := r.authorize(c, req)
	withOps := req.Version >= 3 && req.IncludeAuthorizedOperations
	for _, name := range req.Groups {
		if !az.group(name, kmsg.ACLOperationDescribe) {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = name, errGroupAuth.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		co, err := r.coordinatorFor(name)
		if err != nil {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = name, err.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g := co.DescribeGroup(name, withOps)
		if g.ErrorCode == 0 && g.State == "Dead" {
			r.describeShareGroup(&g) // share_list.go
		}
		if withOps {
			g.AuthorizedOperations = az.ops(kmsg.ACLResourceTypeGroup, name)
		}
		resp.Groups = append(resp.Groups, g)
	}
	respond(resp)
}
