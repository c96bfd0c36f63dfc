package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/internal/kadmin"
	"github.com/floe-broker/floe/node/acl"
)

func init() {
	addCommand("acl", "create, list or delete ACLs (Kafka's CreateAcls, DescribeAcls, DeleteAcls)", runACL)
}

const aclUsage = `usage: floe acl <action> [flags]

actions:
  create   grant (or deny) operations on resources:
             --allow-principal P / --deny-principal P   (User:alice; repeatable)
             --allow-role R / --deny-role R             (the ACL binds role R)
             --host H              the client address it applies to (default *)
             --operation OP        read, write, create, delete, alter, describe,
                                   cluster-action, describe-configs,
                                   alter-configs, idempotent-write or all
                                   (repeatable)
             --producer            WRITE, DESCRIBE and CREATE on the topics;
                                   WRITE and DESCRIBE on --transactional-id;
                                   IDEMPOTENT_WRITE on the cluster with --idempotent
             --consumer            READ and DESCRIBE on the topics, READ on --group
  list     the ACLs matching the filters (every ACL without any)
  delete   the ACLs matching the filters (at least one filter)

resources (create) and filters (list, delete):
  --topic T, --group G, --transactional-id X   (repeatable)
  --cluster                                    the cluster
  --resource-pattern-type literal|prefixed     (create; default literal)
                          any|match|literal|prefixed (list, delete; default
                          any; match with a name: every ACL that applies to it)
  --principal P, --operation OP, --permission allow|deny  (list, delete)

common flags:
  --brokers  comma-separated seed brokers (default 127.0.0.1:9092)
  --timeout  how long to wait for the cluster (default 10s)

Creating and deleting ACLs needs ALTER on the cluster; listing them,
DESCRIBE. See docs/security.md.
`

// aclFlags are every flag of floe acl; each action uses some.
type aclFlags struct {
	allow, deny, allowRoles, denyRoles listFlag
	principals, operations             listFlag
	topics, groups, txnIDs             listFlag
	host, pattern, permission          *string
	cluster, producer, consumer        *bool
	idempotent                         *bool
}

func addACLFlags(fs *flag.FlagSet) *aclFlags {
	f := &aclFlags{}
	fs.Var(&f.allow, "allow-principal", "principal the ACL allows (repeatable)")
	fs.Var(&f.deny, "deny-principal", "principal the ACL denies (repeatable)")
	fs.Var(&f.allowRoles, "allow-role", "role the ACL allows (repeatable)")
	fs.Var(&f.denyRoles, "deny-role", "role the ACL denies (repeatable)")
	fs.Var(&f.principals, "principal", "list, delete: only ACLs of this principal")
	fs.Var(&f.operations, "operation", "operation (repeatable)")
	fs.Var(&f.topics, "topic", "topic (repeatable)")
	fs.Var(&f.groups, "group", "consumer group (repeatable)")
	fs.Var(&f.txnIDs, "transactional-id", "transactional id (repeatable)")
	f.host = fs.String("host", "", "client host the ACL applies to (create: default *)")
	f.pattern = fs.String("resource-pattern-type", "", "literal or prefixed (create); any, match, literal or prefixed (list, delete)")
	f.permission = fs.String("permission", "", "list, delete: allow or deny")
	f.cluster = fs.Bool("cluster", false, "the cluster resource")
	f.producer = fs.Bool("producer", false, "create: what a producer needs")
	f.consumer = fs.Bool("consumer", false, "create: what a consumer needs")
	f.idempotent = fs.Bool("idempotent", false, "create with --producer: IDEMPOTENT_WRITE on the cluster too")
	return f
}

func runACL(args []string) error { return aclMain(args, os.Stdout) }

func aclMain(args []string, out io.Writer) error {
	action, fs, cf, err := beginAction("acl", aclUsage, []string{"create", "list", "delete"}, args, 10*time.Second)
	if action == "" {
		return err
	}
	f := addACLFlags(fs)
	rest, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("%s takes flags only, got %s", action, strings.Join(rest, " "))
	}
	var req kmsg.Request
	switch action {
	case "create":
		bs, err := f.bindings()
		if err != nil {
			return err
		}
		req = kadmin.CreateACLsRequest(bs)
	default:
		fls, err := f.filters(action == "delete")
		if err != nil {
			return err
		}
		if action == "delete" {
			del := kmsg.NewPtrDeleteACLsRequest()
			for _, fl := range fls {
				del.Filters = append(del.Filters, kadmin.DeleteFilter(fl))
			}
			req = del
		} else {
			return cf.withClient(func(ctx context.Context, cl *kgo.Client) error { return listACLs(ctx, cl, fls, out) })
		}
	}
	return cf.withClient(func(ctx context.Context, cl *kgo.Client) error {
		resp, err := cl.Request(ctx, req)
		if err != nil {
			return err
		}
		return reportACLChange(req, resp, out)
	})
}

// withClient runs fn with a client and the command's timeout.
func (cf *clientFlags) withClient(fn func(ctx context.Context, cl *kgo.Client) error) error {
	cl, err := cf.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *cf.timeout)
	defer cancel()
	return cf.explain(fn(ctx, cl))
}

// resource is a resource a command names.
type resource struct {
	rt   acl.ResourceType
	name string
}

func (f *aclFlags) resources() []resource {
	var out []resource
	for _, t := range f.topics {
		out = append(out, resource{kmsg.ACLResourceTypeTopic, t})
	}
	for _, g := range f.groups {
		out = append(out, resource{kmsg.ACLResourceTypeGroup, g})
	}
	for _, x := range f.txnIDs {
		out = append(out, resource{kmsg.ACLResourceTypeTransactionalId, x})
	}
	if *f.cluster {
		out = append(out, resource{kmsg.ACLResourceTypeCluster, acl.ClusterName})
	}
	return out
}

func parseOperation(s string) (acl.Operation, error) {
	op, err := kmsg.ParseACLOperation(s)
	if err != nil {
		return 0, usagef("--operation %q: want read, write, create, delete, alter, describe, cluster-action, describe-configs, alter-configs, idempotent-write or all", s)
	}
	return op, nil
}

// bindings are the ACLs a create asks for.
func (f *aclFlags) bindings() ([]acl.Binding, error) {
	type who struct {
		principal string
		perm      acl.Permission
	}
	var whos []who
	for _, p := range f.allow {
		whos = append(whos, who{p, kmsg.ACLPermissionTypeAllow})
	}
	for _, p := range f.deny {
		whos = append(whos, who{p, kmsg.ACLPermissionTypeDeny})
	}
	for _, r := range f.allowRoles {
		whos = append(whos, who{acl.RolePrefix + r, kmsg.ACLPermissionTypeAllow})
	}
	for _, r := range f.denyRoles {
		whos = append(whos, who{acl.RolePrefix + r, kmsg.ACLPermissionTypeDeny})
	}
	if len(whos) == 0 {
		return nil, usagef("create: name who with --allow-principal, --deny-principal, --allow-role or --deny-role")
	}
	pattern := kmsg.ACLResourcePatternTypeLiteral
	switch strings.ToLower(*f.pattern) {
	case "", "literal":
	case "prefixed":
		pattern = kmsg.ACLResourcePatternTypePrefixed
	default:
		return nil, usagef("--resource-pattern-type %q: create takes literal or prefixed", *f.pattern)
	}
	host := *f.host
	if host == "" {
		host = acl.Wildcard
	}
	grants, err := f.grants()
	if err != nil {
		return nil, err
	}
	var out []acl.Binding
	for _, w := range whos {
		for _, g := range grants {
			for _, op := range g.ops {
				b := acl.Binding{ResourceType: g.res.rt, ResourceName: g.res.name, PatternType: pattern,
					Principal: w.principal, Host: host, Operation: op, Permission: w.perm}
				if g.res.rt == kmsg.ACLResourceTypeCluster {
					b.PatternType = kmsg.ACLResourcePatternTypeLiteral
				}
				if err := b.Validate(); err != nil {
					return nil, usagef("%v: %v", b, err)
				}
				out = append(out, b)
			}
		}
	}
	return out, nil
}

type grantSpec struct {
	res resource
	ops []acl.Operation
}

// grants pairs resources with operations: --operation on every resource
// named, and what --producer and --consumer add.
func (f *aclFlags) grants() ([]grantSpec, error) {
	var ops []acl.Operation
	for _, s := range f.operations {
		op, err := parseOperation(s)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	res := f.resources()
	if len(res) == 0 {
		return nil, usagef("create: name a resource with --topic, --group, --transactional-id or --cluster")
	}
	if len(ops) == 0 && !*f.producer && !*f.consumer {
		return nil, usagef("create: name operations with --operation, or use --producer or --consumer")
	}
	if *f.consumer && len(f.groups) == 0 {
		return nil, usagef("--consumer needs --group")
	}
	var out []grantSpec
	if len(ops) > 0 {
		for _, r := range res {
			out = append(out, grantSpec{r, ops})
		}
	}
	for _, r := range res {
		switch {
		case *f.producer && r.rt == kmsg.ACLResourceTypeTopic:
			out = append(out, grantSpec{r, []acl.Operation{kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe, kmsg.ACLOperationCreate}})
		case *f.producer && r.rt == kmsg.ACLResourceTypeTransactionalId:
			out = append(out, grantSpec{r, []acl.Operation{kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe}})
		}
		switch {
		case *f.consumer && r.rt == kmsg.ACLResourceTypeTopic:
			out = append(out, grantSpec{r, []acl.Operation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe}})
		case *f.consumer && r.rt == kmsg.ACLResourceTypeGroup:
			out = append(out, grantSpec{r, []acl.Operation{kmsg.ACLOperationRead}})
		}
	}
	if *f.producer && *f.idempotent {
		out = append(out, grantSpec{resource{kmsg.ACLResourceTypeCluster, acl.ClusterName}, []acl.Operation{kmsg.ACLOperationIdempotentWrite}})
	}
	return out, nil
}

// filters are the filters a list or delete asks for: one per resource
// named, or one over every resource.
func (f *aclFlags) filters(needOne bool) ([]acl.Filter, error) {
	base := acl.Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	if len(f.allow)+len(f.deny)+len(f.allowRoles)+len(f.denyRoles) > 0 || *f.producer || *f.consumer {
		return nil, usagef("list and delete take --principal, --operation and --permission as filters")
	}
	switch len(f.principals) {
	case 0:
	case 1:
		base.Principal = &f.principals[0]
	default:
		return nil, usagef("--principal: one at a time")
	}
	if *f.host != "" {
		base.Host = f.host
	}
	switch len(f.operations) {
	case 0:
	case 1:
		op, err := parseOperation(f.operations[0])
		if err != nil {
			return nil, err
		}
		base.Operation = op
	default:
		return nil, usagef("--operation: one at a time when filtering")
	}
	switch strings.ToLower(*f.permission) {
	case "", "any":
	case "allow":
		base.Permission = kmsg.ACLPermissionTypeAllow
	case "deny":
		base.Permission = kmsg.ACLPermissionTypeDeny
	default:
		return nil, usagef("--permission %q: allow or deny", *f.permission)
	}
	if *f.pattern != "" {
		pt, err := kmsg.ParseACLResourcePatternType(*f.pattern)
		if err != nil {
			return nil, usagef("--resource-pattern-type %q: any, match, literal or prefixed", *f.pattern)
		}
		base.PatternType = pt
	}
	res := f.resources()
	if needOne && len(res) == 0 && base.Principal == nil {
		return nil, usagef("delete: name at least a --principal or a resource (--topic, --group, --transactional-id, --cluster)")
	}
	if len(res) == 0 {
		return []acl.Filter{base}, nil
	}
	var out []acl.Filter
	for _, r := range res {
		fl := base
		fl.ResourceType, fl.ResourceName = r.rt, &r.name
		out = append(out, fl)
	}
	return out, nil
}

// reportACLChange prints what a create or delete did; a refused part is
// an error (after the rest is printed).
func reportACLChange(req kmsg.Request, resp kmsg.Response, out io.Writer) error {
	var failed error
	switch r := resp.(type) {
	case *kmsg.CreateACLsResponse:
		creations := req.(*kmsg.CreateACLsRequest).Creations
		for i, res := range r.Results {
			c := creations[i]
			b := acl.Binding{ResourceType: c.ResourceType, ResourceName: c.ResourceName, PatternType: c.ResourcePatternType,
				Principal: c.Principal, Host: c.Host, Operation: c.Operation, Permission: c.PermissionType}
			if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
				failed = firstErr(failed, fmt.Errorf("%v: %w", b, kafkaErr(err, strDeref(res.ErrorMessage))))
				continue
			}
			fmt.Fprintf(out, "created ACL: %v\n", b)
		}
	case *kmsg.DeleteACLsResponse:
		n := 0
		for _, res := range r.Results {
			if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
				failed = firstErr(failed, kafkaErr(err, strDeref(res.ErrorMessage)))
				continue
			}
			for _, m := range res.MatchingACLs {
				n++
				fmt.Fprintf(out, "deleted ACL: %v\n", acl.Binding{ResourceType: m.ResourceType, ResourceName: m.ResourceName,
					PatternType: m.ResourcePatternType, Principal: m.Principal, Host: m.Host, Operation: m.Operation, Permission: m.PermissionType})
			}
		}
		if n == 0 && failed == nil {
			fmt.Fprintln(out, "no ACL matched")
		}
	}
	return failed
}

func strDeref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// listACLs prints the ACLs matching any of the filters, as a table.
func listACLs(ctx context.Context, cl *kgo.Client, fls []acl.Filter, out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PRINCIPAL\tPERMISSION\tOPERATION\tHOST\tRESOURCE\tPATTERN\tNAME")
	for _, f := range fls {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourceName, req.ResourcePatternType = f.ResourceType, f.ResourceName, f.PatternType
		req.Principal, req.Host, req.Operation, req.PermissionType = f.Principal, f.Host, f.Operation, f.Permission
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return kafkaErr(err, strDeref(resp.ErrorMessage))
		}
		for _, r := range resp.Resources {
			for _, a := range r.ACLs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Principal, a.PermissionType, a.Operation, a.Host, r.ResourceType, r.ResourcePatternType, r.ResourceName)
			}
		}
	}
	return tw.Flush()
}
