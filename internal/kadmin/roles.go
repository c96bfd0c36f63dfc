package kadmin

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RoleResource is the config resource type the broker serves roles as
// (node/roles.go): DescribeConfigs of a role reads it, and
// IncrementalAlterConfigs of its members config changes it.
const RoleResource kmsg.ConfigResourceType = 100

// RoleMembers is a role's one alterable config: its members, comma-separated.
const RoleMembers = "members"

// AlterRole sends IncrementalAlterConfigs of the role's members: op Set
// creates the role with these members, Append binds them, Subtract unbinds
// them, Delete deletes the role (members are then not sent).
func AlterRole(ctx context.Context, cl *kgo.Client, role string, op kmsg.IncrementalAlterConfigOp, members []string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = RoleResource, role
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op = RoleMembers, op
	if op != kmsg.IncrementalAlterConfigOpDelete {
		c.Value = kmsg.StringPtr(strings.Join(members, ","))
	}
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Resources) != 1 {
		return fmt.Errorf("IncrementalAlterConfigs answered %d resources for 1", len(resp.Resources))
	}
	res := resp.Resources[0]
	return refused(kerr.ErrorForCode(res.ErrorCode), res.ErrorMessage)
}

// DescribeRole returns a role's configs by name (members, builtin,
// grants). With an empty role it returns every role instead, by role name,
// each valued by its members and documented "built-in role NAME" or
// "role NAME".
func DescribeRole(ctx context.Context, cl *kgo.Client, role string) (map[string]*kmsg.DescribeConfigsResponseResourceConfig, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeDocumentation = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = RoleResource, role
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if len(resp.Resources) != 1 {
		return nil, fmt.Errorf("DescribeConfigs answered %d resources for 1", len(resp.Resources))
	}
	res := resp.Resources[0]
	if err := refused(kerr.ErrorForCode(res.ErrorCode), res.ErrorMessage); err != nil {
		return nil, err
	}
	out := map[string]*kmsg.DescribeConfigsResponseResourceConfig{}
	for i := range res.Configs {
		out[res.Configs[i].Name] = &res.Configs[i]
	}
	return out, nil
}
