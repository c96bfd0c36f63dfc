package kadmin

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
)

// CreateACLsRequest is CreateAcls of the bindings, one creation each, in
// order (the answer's results are in the same order).
func CreateACLsRequest(bs []acl.Binding) *kmsg.CreateACLsRequest {
	req := kmsg.NewPtrCreateACLsRequest()
	for _, b := range bs {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
		c.Principal, c.Host, c.Operation, c.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		req.Creations = append(req.Creations, c)
	}
	return req
}

// DeleteFilter is a DeleteAcls filter of f.
func DeleteFilter(f acl.Filter) kmsg.DeleteACLsRequestFilter {
	d := kmsg.NewDeleteACLsRequestFilter()
	d.ResourceType, d.ResourceName, d.ResourcePatternType = f.ResourceType, f.ResourceName, f.PatternType
	d.Principal, d.Host, d.Operation, d.PermissionType = f.Principal, f.Host, f.Operation, f.Permission
	return d
}

// ExactFilter matches exactly the one binding: every field given, and its
// pattern type itself (never MATCH or ANY).
func ExactFilter(b acl.Binding) acl.Filter {
	return acl.Filter{ResourceType: b.ResourceType, ResourceName: &b.ResourceName, PatternType: b.PatternType,
		Principal: &b.Principal, Host: &b.Host, Operation: b.Operation, Permission: b.Permission}
}
