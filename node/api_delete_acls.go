package node

// DeleteAcls (key 31), versions 0-3.
//
// Needs ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED on every
// filter). A filter with an UNKNOWN field gets INVALID_REQUEST; the valid
// ones are applied in one controller command, so what each deletes is
// decided in the metadata log's order against every other change. Each
// filter's answer lists the ACLs it deleted; an ACL that several filters
// match is listed under the first. v0 filters LITERAL patterns.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
	"github.com/floe-broker/floe/node/controller"
)

func serveDeleteACLs(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	filters, results := aclEntries(req.Filters, func(rf kmsg.DeleteACLsRequestFilter) acl.Filter {
		return filterOf(req.Version, rf)
	}, kmsg.NewDeleteACLsResponseResult)
	resp.Results = results
	serveACLChange(r, r.authorize(c, req).cluster(kmsg.ACLOperationAlter), aclChange[acl.Filter]{
		entries: filters,
		setErr: func(i int, code int16, msg *string) {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
		},
		command: func(valid []acl.Filter) *controller.Command { return &controller.Command{DeleteACLs: valid} },
		applied: func(res controller.Result, k, i int) { addDeletedACLs(&resp.Results[i], res, k) },
	}, func() { respond(resp) })
}

// filterOf is a request's filter sent at version.
func filterOf(version int16, rf kmsg.DeleteACLsRequestFilter) acl.Filter {
	return acl.Filter{ResourceType: rf.ResourceType, ResourceName: rf.ResourceName,
		PatternType: patternTypeAt(version, rf.ResourcePatternType),
		Principal:   rf.Principal, Host: rf.Host, Operation: rf.Operation, Permission: rf.PermissionType}
}

// addDeletedACLs lists, in filter k's answer, the ACLs it deleted.
func addDeletedACLs(out *kmsg.DeleteACLsResponseResult, res controller.Result, k int) {
	if res.DeletedACLs == nil || k >= len(res.DeletedACLs.Deleted) {
		return
	}
	for _, b := range res.DeletedACLs.Deleted[k] {
		m := kmsg.NewDeleteACLsResponseResultMatchingACL()
		m.ResourceType, m.ResourceName, m.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
		m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		out.MatchingACLs = append(out.MatchingACLs, m)
	}
}
