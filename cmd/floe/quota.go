package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

func init() {
	addCommand("quota", "describe or alter client quotas (produce and fetch byte rates)", runQuota)
}

const quotaUsage = `usage: floe quota <action> [flags]

actions:
  describe   the quotas whose entity matches the entity flags given (none:
             every quota); --strict leaves out entities with other parts
  alter      set and remove quotas of one entity
             --add-config K=V[,K=V]   set keys
             --delete-config K[,K]    remove keys
             --validate-only          check, change nothing

entity flags (as kafka-configs.sh):
  --user NAME | --user-defaults        a user, or the default user
  --client NAME | --client-defaults    a client id, or the default client id
  --ip ADDR | --ip-defaults            an IP address, or the default IP
  A user and a client id may be combined; an ip stands alone.

keys: producer_byte_rate, consumer_byte_rate (bytes/s, integers),
request_percentage, controller_mutation_rate (user and client entities);
connection_creation_rate (ip entities). Each broker enforces all but
controller_mutation_rate, which is stored only, on what passes through it.

common flags:
  --brokers         comma-separated seed brokers (default 127.0.0.1:9092)
  --command-config  Kafka client properties file (TLS, SASL; docs/security.md)
  --timeout         how long to wait for the cluster (default 10s)
`

func runQuota(args []string) error { return quotaMain(args, os.Stdout) }

// quotaEntityFlags are the entity flags of both actions.
type quotaEntityFlags struct {
	user, client, ip                      *string
	userDefault, clientDefault, ipDefault *bool
}

func quotaMain(args []string, out io.Writer) error {
	action, fs, cf, err := beginAction("quota", quotaUsage, []string{"describe", "alter"}, args, 10*time.Second)
	if action == "" {
		return err
	}
	ef := quotaEntityFlags{
		user: fs.String("user", "", "a user name"), client: fs.String("client", "", "a client id"), ip: fs.String("ip", "", "an IP address"),
		userDefault:   fs.Bool("user-defaults", false, "the default user"),
		clientDefault: fs.Bool("client-defaults", false, "the default client id"),
		ipDefault:     fs.Bool("ip-defaults", false, "the default IP"),
	}
	strict := fs.Bool("strict", false, "describe: only entities with no part besides those given")
	add := fs.String("add-config", "", "alter: keys to set, K=V[,K=V]")
	del := fs.String("delete-config", "", "alter: keys to remove, K[,K]")
	validateOnly := fs.Bool("validate-only", false, "alter: check, change nothing")
	rest, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("unexpected arguments: %s", strings.Join(rest, " "))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	entity, err := ef.entity(set)
	if err != nil {
		return err
	}
	var run func(ctx context.Context, adm *kadm.Client) error
	switch action {
	case "describe":
		if *add != "" || *del != "" || *validateOnly {
			return usagef("describe takes no --add-config, --delete-config or --validate-only")
		}
		run = func(ctx context.Context, adm *kadm.Client) error {
			return quotaDescribe(ctx, adm, entity, *strict, out)
		}
	case "alter":
		if len(entity) == 0 {
			return usagef("alter: name an entity (--user, --client, --ip or their -defaults)")
		}
		if *strict {
			return usagef("alter takes no --strict")
		}
		ops, err := quotaOps(*add, *del)
		if err != nil {
			return err
		}
		run = func(ctx context.Context, adm *kadm.Client) error {
			return quotaAlter(ctx, adm, entity, ops, *validateOnly, out)
		}
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *cf.timeout)
	defer cancel()
	return cf.explain(run(ctx, kadm.NewClient(cl)))
}

// entity builds the entity the flags name, checking each type is given
// once (a name or its -defaults, not both).
func (ef quotaEntityFlags) entity(set map[string]bool) (kadm.ClientQuotaEntity, error) {
	var e kadm.ClientQuotaEntity
	for _, p := range []struct {
		typ, flag string
		name      *string
		dflt      *bool
	}{
		{"user", "user", ef.user, ef.userDefault},
		{"client-id", "client", ef.client, ef.clientDefault},
		{"ip", "ip", ef.ip, ef.ipDefault},
	} {
		named, dflt := set[p.flag], *p.dflt
		switch {
		case named && dflt:
			return nil, usagef("give --%s or --%s-defaults, not both", p.flag, p.flag)
		case named:
			n := *p.name
			e = append(e, kadm.ClientQuotaEntityComponent{Type: p.typ, Name: &n})
		case dflt:
			e = append(e, kadm.ClientQuotaEntityComponent{Type: p.typ})
		}
	}
	return e, nil
}

// quotaOps parses --add-config and --delete-config.
func quotaOps(add, del string) ([]kadm.AlterClientQuotaOp, error) {
	var ops []kadm.AlterClientQuotaOp
	for _, kv := range splitList(add) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--add-config %q: want KEY=VALUE", kv)
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, usagef("--add-config %s: %q is not a number", k, v)
		}
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Value: f})
	}
	for _, k := range splitList(del) {
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
	}
	if len(ops) == 0 {
		return nil, usagef("alter: give --add-config or --delete-config")
	}
	return ops, nil
}

func quotaDescribe(ctx context.Context, adm *kadm.Client, e kadm.ClientQuotaEntity, strict bool, out io.Writer) error {
	var comps []kadm.DescribeClientQuotaComponent
	for _, p := range e {
		c := kadm.DescribeClientQuotaComponent{Type: p.Type, MatchName: p.Name, MatchType: 0}
		if p.Name == nil {
			c.MatchType = 1
		}
		comps = append(comps, c)
	}
	qs, err := adm.DescribeClientQuotas(ctx, strict, comps)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENTITY\tKEY\tVALUE")
	for _, q := range qs {
		for _, v := range q.Values {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", quotaEntityString(q.Entity), v.Key, strconv.FormatFloat(v.Value, 'f', -1, 64))
		}
	}
	return tw.Flush()
}

func quotaAlter(ctx context.Context, adm *kadm.Client, e kadm.ClientQuotaEntity, ops []kadm.AlterClientQuotaOp, validateOnly bool, out io.Writer) error {
	entries := []kadm.AlterClientQuotaEntry{{Entity: e, Ops: ops}}
	alter := adm.AlterClientQuotas
	if validateOnly {
		alter = adm.ValidateAlterClientQuotas
	}
	res, err := alter(ctx, entries)
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			if r.ErrMessage != "" {
				return fmt.Errorf("%s: %w: %s", quotaEntityString(r.Entity), r.Err, r.ErrMessage)
			}
			return fmt.Errorf("%s: %w", quotaEntityString(r.Entity), r.Err)
		}
	}
	verb := "altered"
	if validateOnly {
		verb = "valid (nothing changed)"
	}
	fmt.Fprintf(out, "quota %s: %s\n", quotaEntityString(e), verb)
	return nil
}

// quotaEntityString is "user=alice,client-id=<default>".
func quotaEntityString(e kadm.ClientQuotaEntity) string {
	parts := make([]string, len(e))
	for i, p := range e {
		n := "<default>"
		if p.Name != nil {
			n = *p.Name
		}
		parts[i] = p.Type + "=" + n
	}
	return strings.Join(parts, ",")
}
