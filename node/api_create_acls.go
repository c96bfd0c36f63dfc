package node

// CreateAcls (key 30), versions 0-3.
//
// Needs ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED on every
// creation). Each creation is checked as Kafka checks it (acl.Binding
// Validate: a supported resource type, LITERAL or PREFIXED, a concrete
// operation, ALLOW or DENY, a non-empty name, "kafka-cluster" for the
// cluster, a "Type:name" principal, a host); a bad one gets
// INVALID_REQUEST with the reason and the others go on. The valid ones are
// applied in one controller command, answered once this broker's metadata
// has it. Creating an ACL that exists is a success that changes nothing.
// A principal "Role:NAME" binds the ACL to role NAME (roles.go). v0 has no
// pattern type: its ACLs are LITERAL.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
	"github.com/floe-broker/floe/node/controller"
)

func serveCreateACLs(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	allowed := r.authorize(c, req).cluster(kmsg.ACLOperationAlter)
	var valid []acl.Binding
	var at []int
	for i, cr := range req.Creations {
		res := &resp.Results[i]
		*res = kmsg.NewCreateACLsResponseResult()
		if !allowed {
			res.ErrorCode = errClusterAuth.Code
			continue
		}
		b := bindingOfCreation(cr)
		if req.Version == 0 {
			b.PatternType = kmsg.ACLResourcePatternTypeLiteral
		}
		if err := b.Validate(); err != nil {
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
			continue
		}
		valid = append(valid, b)
		at = append(at, i)
	}
	if len(valid) == 0 {
		respond(resp)
		return
	}
	r.propose(&controller.Command{CreateACLs: valid}, func(res controller.Result) {
		code, msg := errParts(res.Err)
		for _, i := range at {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
		}
		respond(resp)
	})
}

func bindingOfCreation(cr kmsg.CreateACLsRequestCreation) acl.Binding {
	return acl.Binding{ResourceType: cr.ResourceType, ResourceName: cr.ResourceName, PatternType: cr.ResourcePatternType,
		Principal: cr.Principal, Host: cr.Host, Operation: cr.Operation, Permission: cr.PermissionType}
}
