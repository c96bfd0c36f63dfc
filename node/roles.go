package node

// Roles over the Kafka protocol.
//
// A role's grants are ordinary ACLs whose principal is "Role:NAME"
// (CreateAcls, DescribeAcls, DeleteAcls), as Redpanda binds ACLs to
// "RedpandaRole:NAME". Membership travels as a Floe config resource: type
// 100 (FLOE_ROLE, not a Kafka type) named by the role, with one config,
// "members", the comma-separated principals bound to it:
//
//   - IncrementalAlterConfigs SET members: creates the role (if custom and
//     new) with exactly these members; APPEND binds principals; SUBTRACT
//     unbinds them; DELETE deletes a custom role with its members and its
//     grants. Needs ALTER on the cluster, as CreateAcls does.
//   - DescribeConfigs of a role: "members", "builtin" (read-only) and
//     "grants" (read-only: the role's ACLs, the built-in ones included).
//     With an empty name: one config per role, named by the role, whose
//     value is its members. Needs DESCRIBE on the cluster, as DescribeAcls
//     does.
//
// So role changes go through the same authentication, authorization and
// audit as every other change, with any Kafka client library.

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
	"github.com/floe-broker/floe/node/controller"
)

// roleConfigResource is the config resource type of a role.
const roleConfigResource kmsg.ConfigResourceType = 100

// roleMembersConfig is a role's one alterable config.
const roleMembersConfig = "members"

// describeRole answers DescribeConfigs for a role resource.
func (r *Reactor) describeRole(rr kmsg.DescribeConfigsRequestResource, sr *kmsg.DescribeConfigsResponseResource) {
	st := r.ctl.state
	config := func(name, value, doc string, readOnly bool) {
		if len(rr.ConfigNames) > 0 && !containsString(rr.ConfigNames, name) {
			return
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.ReadOnly = name, kmsg.StringPtr(value), readOnly
		c.Source = kmsg.ConfigSourceDynamicBrokerConfig
		c.ConfigType = kmsg.ConfigTypeList
		c.Documentation = kmsg.StringPtr(doc)
		sr.Configs = append(sr.Configs, c)
	}
	if rr.ResourceName == "" {
		for _, name := range st.RoleNames() {
			members, _ := st.RoleMembers(name)
			config(name, strings.Join(members, ","), roleDoc(name), false)
		}
		return
	}
	members, ok := st.RoleMembers(rr.ResourceName)
	if !ok {
		sr.ErrorCode, sr.ErrorMessage = kerr.ResourceNotFound.Code, kmsg.StringPtr(fmt.Sprintf("no role %s", rr.ResourceName))
		return
	}
	config(roleMembersConfig, strings.Join(members, ","), "The principals bound to the role.", false)
	config("builtin", fmt.Sprint(acl.IsBuiltin(rr.ResourceName)), "Whether the role is built in.", true)
	config("grants", strings.Join(r.roleGrants(rr.ResourceName), ";"), "The role's ACLs: built-in grants, then ACLs naming Role:"+rr.ResourceName+".", true)
}

func roleDoc(name string) string {
	if acl.IsBuiltin(name) {
		return "built-in role " + name
	}
	return "role " + name
}

// roleGrants lists what a role grants: its built-in bindings, then the
// stored ACLs whose principal is the role.
func (r *Reactor) roleGrants(name string) []string {
	var out []string
	for _, b := range acl.Builtin[name] {
		out = append(out, b.String())
	}
	for _, b := range r.ctl.state.ACLs {
		if b.Principal == acl.RolePrefix+name {
			out = append(out, b.String())
		}
	}
	return out
}

// planRoleChange turns an IncrementalAlterConfigs of a role resource into
// its controller command.
func (r *Reactor) planRoleChange(rr kmsg.IncrementalAlterConfigsRequestResource) (*controller.Command, error) {
	if err := acl.ValidateRoleName(rr.ResourceName); err != nil {
		return nil, withMessage(kerr.InvalidRequest, err.Error())
	}
	if len(rr.Configs) != 1 || rr.Configs[0].Name != roleMembersConfig {
		return nil, withMessage(kerr.InvalidConfig, "a role resource takes exactly one operation on its one config, members")
	}
	c := rr.Configs[0]
	ch := &controller.RoleChange{Role: rr.ResourceName}
	var members []string
	if c.Value != nil {
		members = splitConfigList(*c.Value)
	}
	for _, m := range members {
		if err := acl.ValidatePrincipal(m); err != nil {
			return nil, withMessage(kerr.InvalidConfig, err.Error())
		}
	}
	switch c.Op {
	case kmsg.IncrementalAlterConfigOpSet:
		if members == nil {
			members = []string{}
		}
		ch.Set = &members
	case kmsg.IncrementalAlterConfigOpAppend:
		ch.Add = members
	case kmsg.IncrementalAlterConfigOpSubtract:
		ch.Remove = members
	case kmsg.IncrementalAlterConfigOpDelete:
		ch.Delete = true
	default:
		return nil, withMessage(kerr.InvalidRequest, fmt.Sprintf("unknown operation %d", c.Op))
	}
	if !ch.Delete && ch.Set == nil && len(members) == 0 {
		return nil, withMessage(kerr.InvalidConfig, fmt.Sprintf("%s needs at least one principal", c.Op))
	}
	if _, ok := r.ctl.state.RoleMembers(rr.ResourceName); !ok && ch.Set == nil {
		return nil, withMessage(kerr.ResourceNotFound, fmt.Sprintf("no role %s (create it with SET first)", rr.ResourceName))
	}
	return &controller.Command{ChangeRole: ch}, nil
}
