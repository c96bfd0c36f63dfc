package node

// DescribeGroups (key 15), versions 0-5: each group described by its
// coordinator (group/admin.go), or NOT_COORDINATOR /
// COORDINATOR_LOAD_IN_PROGRESS for groups this broker does not serve. v3
// adds authorized operations (all allowed: no ACLs yet), v4 instance ids;
// v6 (error messages, GROUP_ID_NOT_FOUND for unknown groups) is not
// advertised.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(15, 0, 5, serveDescribeGroups) }

func serveDescribeGroups(r *Reactor, _ Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, name := range req.Groups {
		co, err := r.coordinatorFor(name)
		if err != nil {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = name, err.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		resp.Groups = append(resp.Groups, co.DescribeGroup(name, req.Version >= 3 && req.IncludeAuthorizedOperations))
	}
	respond(resp)
}
