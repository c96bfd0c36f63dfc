package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/internal/kadmin"
	"github.com/floe-broker/floe/node/acl"
)

func init() {
	addCommand("role", "create, bind, unbind, list, describe or delete roles (RBAC)", runRole)
}

const roleUsage = `usage: floe role <action> [flags] ROLE [PRINCIPAL...]

actions:
  list                         every role: built in or custom, members
  describe ROLE...             a role's members and grants
  create ROLE [PRINCIPAL...]   a custom role, with these members
  bind ROLE PRINCIPAL...       make principals (User:alice) members
  unbind ROLE PRINCIPAL...     stop them being members
  delete ROLE                  a custom role, with its members and its ACLs

A role's grants are ACLs bound to it: floe acl create --allow-role ROLE ...
Built-in roles: admin, operator, producer, consumer, viewer
(docs/security.md says what each grants).

common flags:
  --brokers  comma-separated seed brokers (default 127.0.0.1:9092)
  --timeout  how long to wait for the cluster (default 10s)

Changing roles needs ALTER on the cluster; reading them, DESCRIBE.
`

func runRole(args []string) error { return roleMain(args, os.Stdout) }

func roleMain(args []string, out io.Writer) error {
	action, fs, cf, err := beginAction("role", roleUsage, []string{"list", "describe", "create", "bind", "unbind", "delete"}, args, 10*time.Second)
	if action == "" {
		return err
	}
	names, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	var op kmsg.IncrementalAlterConfigOp
	switch action {
	case "list":
		if len(names) > 0 {
			return usagef("list takes no names")
		}
		return cf.withClient(func(ctx context.Context, cl *kgo.Client) error { return listRoles(ctx, cl, out) })
	case "describe":
		if len(names) == 0 {
			return usagef("describe: name a role")
		}
		return cf.withClient(func(ctx context.Context, cl *kgo.Client) error { return describeRoles(ctx, cl, names, out) })
	case "create":
		op = kmsg.IncrementalAlterConfigOpSet
	case "bind":
		op = kmsg.IncrementalAlterConfigOpAppend
	case "unbind":
		op = kmsg.IncrementalAlterConfigOpSubtract
	case "delete":
		op = kmsg.IncrementalAlterConfigOpDelete
	}
	if len(names) == 0 {
		return usagef("%s: name a role", action)
	}
	role, members := names[0], names[1:]
	if err := acl.ValidateRoleName(role); err != nil {
		return usagef("%v", err)
	}
	for _, m := range members {
		if err := acl.ValidatePrincipal(m); err != nil {
			return usagef("%v", err)
		}
	}
	switch {
	case (action == "bind" || action == "unbind") && len(members) == 0:
		return usagef("%s: name principals (User:alice)", action)
	case action == "delete" && len(members) > 0:
		return usagef("delete takes one role, got %s", strings.Join(names, " "))
	}
	if action == "create" {
		if exists, err := roleExists(cf, role); err != nil {
			return err
		} else if exists {
			return fmt.Errorf("role %s exists already (bind members with floe role bind)", role)
		}
	}
	return cf.withClient(func(ctx context.Context, cl *kgo.Client) error {
		if err := brokerErr(kadmin.AlterRole(ctx, cl, role, op, members)); err != nil {
			return fmt.Errorf("role %s: %w", role, err)
		}
		switch action {
		case "create":
			fmt.Fprintf(out, "created role %s\n", role)
		case "delete":
			fmt.Fprintf(out, "deleted role %s\n", role)
		case "bind":
			fmt.Fprintf(out, "bound %s to role %s\n", strings.Join(members, ", "), role)
		default:
			fmt.Fprintf(out, "unbound %s from role %s\n", strings.Join(members, ", "), role)
		}
		return nil
	})
}

func roleExists(cf *clientFlags, role string) (bool, error) {
	var exists bool
	err := cf.withClient(func(ctx context.Context, cl *kgo.Client) error {
		roles, err := describeRole(ctx, cl, "")
		exists = roles[role] != nil
		return err
	})
	return exists, err
}

// describeRole is kadmin.DescribeRole, its refusal worded as the CLI
// words Kafka errors.
func describeRole(ctx context.Context, cl *kgo.Client, role string) (map[string]*kmsg.DescribeConfigsResponseResourceConfig, error) {
	cfgs, err := kadmin.DescribeRole(ctx, cl, role)
	return cfgs, brokerErr(err)
}

func listRoles(ctx context.Context, cl *kgo.Client, out io.Writer) error {
	roles, err := describeRole(ctx, cl, "")
	if err != nil {
		return err
	}
	names := slices.Sorted(maps.Keys(roles))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tKIND\tMEMBERS")
	for _, n := range names {
		kind := "custom"
		if acl.IsBuiltin(n) {
			kind = "built-in"
		}
		members := strDeref(roles[n].Value)
		if members == "" {
			members = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n, kind, members)
	}
	return tw.Flush()
}

func describeRoles(ctx context.Context, cl *kgo.Client, names []string, out io.Writer) error {
	for i, name := range names {
		cfgs, err := describeRole(ctx, cl, name)
		if err != nil {
			return fmt.Errorf("role %s: %w", name, err)
		}
		if i > 0 {
			fmt.Fprintln(out)
		}
		get := func(k string) string {
			if c := cfgs[k]; c != nil {
				return strDeref(c.Value)
			}
			return ""
		}
		fmt.Fprintf(out, "ROLE %s (built in: %s)\nMEMBERS %s\nGRANTS\n", name, get("builtin"), orDash(get("members")))
		for _, g := range strings.Split(get("grants"), ";") {
			if g != "" {
				fmt.Fprintf(out, "  %s\n", g)
			}
		}
	}
	return nil
}
