package node

// DescribeAcls (key 29), versions 0-3.
//
// Needs DESCRIBE on the cluster (else CLUSTER_AUTHORIZATION_FAILED). The
// filter (acl.Filter: ANY, MATCH, LITERAL or PREFIXED patterns, ANY
// operation and permission, nil name, principal and host for any) must
// have no UNKNOWN field, else INVALID_REQUEST. The answer lists the
// matching ACLs of this broker's applied metadata grouped by resource
// pattern, in a fixed order (resource type, pattern type, name; then
// principal, host, operation, permission). v0 filters LITERAL patterns.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
)

func serveDescribeACLs(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if !r.authorize(c, req).cluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode = errClusterAuth.Code
		respond(resp)
		return
	}
	f := acl.Filter{ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType}
	if req.Version == 0 {
		f.PatternType = kmsg.ACLResourcePatternTypeLiteral
	}
	if err := f.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
		respond(resp)
		return
	}
	for _, b := range r.ctl.state.ACLs {
		if !f.Matches(b) {
			continue
		}
		n := len(resp.Resources)
		if n == 0 || resp.Resources[n-1].ResourceType != b.ResourceType || resp.Resources[n-1].ResourceName != b.ResourceName ||
			resp.Resources[n-1].ResourcePatternType != b.PatternType {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
			resp.Resources = append(resp.Resources, res)
			n++
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host, e.Operation, e.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, e)
	}
	respond(resp)
}
