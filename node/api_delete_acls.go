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
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
	"github.com/floe-broker/floe/node/controller"
)

func serveDeleteACLs(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	allowed := r.authorize(c, req).cluster(kmsg.ACLOperationAlter)
	var valid []acl.Filter
	var at []int
	for i, rf := range req.Filters {
		res := &resp.Results[i]
		*res = kmsg.NewDeleteACLsResponseResult()
		if !allowed {
			res.ErrorCode = errClusterAuth.Code
			continue
		}
		f := acl.Filter{ResourceType: rf.ResourceType, ResourceName: rf.ResourceName, PatternType: rf.ResourcePatternType,
			Principal: rf.Principal, Host: rf.Host, Operation: rf.Operation, Permission: rf.PermissionType}
		if req.Version == 0 {
			f.PatternType = kmsg.ACLResourcePatternTypeLiteral
		}
		if err := f.Validate(); err != nil {
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
			continue
		}
		valid = append(valid, f)
		at = append(at, i)
	}
	if len(valid) == 0 {
		respond(resp)
		return
	}
	r.propose(&controller.Command{DeleteACLs: valid}, func(res controller.Result) {
		code, msg := errParts(res.Err)
		for k, i := range at {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
			if res.DeletedACLs == nil || k >= len(res.DeletedACLs.Deleted) {
				continue
			}
			for _, b := range res.DeletedACLs.Deleted[k] {
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType, m.ResourceName, m.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
				m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
				resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
			}
		}
		respond(resp)
	})
}
