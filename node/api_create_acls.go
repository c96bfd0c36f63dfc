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
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
	"github.com/floe-broker/floe/node/controller"
)

func serveCreateACLs(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	var bindings []acl.Binding
	bindings, resp.Results = aclEntries(req.Creations, func(cr kmsg.CreateACLsRequestCreation) acl.Binding {
		b := bindingOfCreation(cr)
		b.PatternType = patternTypeAt(req.Version, cr.ResourcePatternType)
		return b
	}, kmsg.NewCreateACLsResponseResult)
	serveACLChange(r, r.authorize(c, req).cluster(kmsg.ACLOperationAlter), aclChange[acl.Binding]{
		entries: bindings,
		setErr: func(i int, code int16, msg *string) {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
		},
		command: func(valid []acl.Binding) *controller.Command { return &controller.Command{CreateACLs: valid} },
	}, func() { respond(resp) })
}

func bindingOfCreation(cr kmsg.CreateACLsRequestCreation) acl.Binding {
	return acl.Binding{ResourceType: cr.ResourceType, ResourceName: cr.ResourceName, PatternType: cr.ResourcePatternType,
		Principal: cr.Principal, Host: cr.Host, Operation: cr.Operation, Permission: cr.PermissionType}
}
