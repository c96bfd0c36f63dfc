package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/group"
)

func init() {
	addCommand("group", "list, describe, show the lag of, or delete consumer groups", runGroup)
}

const groupUsage = `usage: floe group <action> [flags] [group ...]

actions:
  list              every group: state, protocol type, coordinator
  describe GROUP... state, protocol and members with their assignments
  lag [GROUP...]    per partition: committed offset, log end offset, lag
                    (every group when none is named)
  delete GROUP...   delete groups that have no members

flags:
  --brokers  comma-separated seed brokers (default 127.0.0.1:9092)
  --command-config  Kafka client properties file (TLS, SASL; docs/security.md)
  --state    list: only groups in these states (comma-separated)
  --timeout  how long to wait for the cluster (default 10s)

Flags and group names may come in any order. Every flag can also come from
FLOE_<NAME> or a --config file, as for floe serve. A group the brokers do
not know is reported as "group NAME not found" (exit status 1).
`

// groupFlags are the flags every action takes.
type groupFlags struct {
	*clientFlags
	state *string
}

func runGroup(args []string) error { return groupMain(args, os.Stdout) }

func groupMain(args []string, out io.Writer) error {
	action, fs, cf, err := beginAction("group", groupUsage, []string{"list", "describe", "lag", "delete"}, args, 10*time.Second)
	if action == "" {
		return err
	}
	run := map[string]func(context.Context, *kadm.Client, *groupFlags, []string, io.Writer) error{
		"list": groupList, "describe": groupDescribe, "lag": groupLag, "delete": groupDelete,
	}[action]
	gf := &groupFlags{
		clientFlags: cf,
		state:       fs.String("state", "", "list: only groups in these states (comma-separated)"),
	}
	names, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	switch {
	case (action == "describe" || action == "delete") && len(names) == 0:
		return usagef("floe group %s: name at least one group", action)
	case action == "list" && len(names) > 0:
		return usagef("floe group list takes no group names (got %s)", strings.Join(names, " "))
	}
	cl, err := gf.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *gf.timeout)
	defer cancel()
	return gf.explain(run(ctx, kadm.NewClient(cl), gf, names, out))
}

func groupList(ctx context.Context, adm *kadm.Client, gf *groupFlags, names []string, out io.Writer) error {
	var states []string
	if *gf.state != "" {
		states = splitList(*gf.state)
	}
	listed, err := adm.ListGroups(ctx, states...)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSTATE\tPROTOCOL-TYPE\tCOORDINATOR")
	for _, g := range listed.Sorted() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", g.Group, g.State, orDash(g.ProtocolType), g.Coordinator)
	}
	return tw.Flush()
}

func groupDescribe(ctx context.Context, adm *kadm.Client, _ *groupFlags, names []string, out io.Writer) error {
	described, err := adm.DescribeGroups(ctx, names...)
	if err != nil {
		return err
	}
	consumer := describeConsumerGroups(ctx, adm, described)
	var firstErr error
	for i, g := range described.Sorted() {
		if i > 0 {
			fmt.Fprintln(out)
		}
		if cg, ok := consumer[g.Group]; ok {
			if err := printConsumerGroup(out, cg); err != nil {
				return err
			}
			continue
		}
		if err := groupErr(g.Group, g.State, g.Err); err != nil {
			fmt.Fprintln(out, err)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		fmt.Fprintf(out, "GROUP %s  STATE %s  PROTOCOL %s/%s  COORDINATOR %d  MEMBERS %d\n",
			g.Group, g.State, orDash(g.ProtocolType), orDash(g.Protocol), g.Coordinator.NodeID, len(g.Members))
		if len(g.Members) == 0 {
			continue
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "MEMBER-ID\tINSTANCE-ID\tCLIENT-ID\tHOST\tASSIGNED")
		for _, m := range g.Members {
			inst := "-"
			if m.InstanceID != nil {
				inst = *m.InstanceID
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.MemberID, inst, m.ClientID, m.ClientHost, assignedString(m.Assigned))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return firstErr
}

// describeConsumerGroups describes, with ConsumerGroupDescribe, the groups
// DescribeGroups did not find: a KIP-848 group is not a classic group, and
// DescribeGroups answers GROUP_ID_NOT_FOUND for it, as Kafka's does. Groups
// it cannot describe either are left out (they stay not found).
func describeConsumerGroups(ctx context.Context, adm *kadm.Client, classic kadm.DescribedGroups) map[string]kadm.DescribedConsumerGroup {
	var missing []string
	for _, g := range classic.Sorted() {
		if errors.Is(g.Err, kerr.GroupIDNotFound) {
			missing = append(missing, g.Group)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	described, _ := adm.DescribeConsumerGroups(ctx, missing...)
	found := map[string]kadm.DescribedConsumerGroup{}
	for name, g := range described {
		if g.Err == nil && g.State != group.Dead.String() {
			found[name] = g
		}
	}
	return found
}

// printConsumerGroup prints a KIP-848 group: its epochs, its assignor and
// each member's epoch, current and target assignment.
func printConsumerGroup(out io.Writer, g kadm.DescribedConsumerGroup) error {
	fmt.Fprintf(out, "GROUP %s  STATE %s  PROTOCOL consumer/%s  COORDINATOR %d  MEMBERS %d  EPOCH %d  ASSIGNMENT-EPOCH %d\n",
		g.Group, g.State, orDash(g.AssignorName), g.Coordinator.NodeID, len(g.Members), g.Epoch, g.AssignmentEpoch)
	if len(g.Members) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER-ID\tINSTANCE-ID\tCLIENT-ID\tHOST\tEPOCH\tASSIGNED\tTARGET")
	for _, m := range g.Members {
		inst := "-"
		if m.InstanceID != nil {
			inst = *m.InstanceID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", m.MemberID, inst, m.ClientID, m.ClientHost, m.MemberEpoch,
			topicsString(m.Assignment), topicsString(m.TargetAssignment))
	}
	return tw.Flush()
}

// topicsString renders partitions as topic:p,p,... topic:..., sorted.
func topicsString(ts kadm.TopicsSet) string {
	var parts []string
	for _, t := range ts.Sorted() {
		if len(t.Partitions) == 0 {
			continue
		}
		strs := make([]string, len(t.Partitions))
		for i, p := range t.Partitions {
			strs[i] = fmt.Sprint(p)
		}
		parts = append(parts, t.Topic+":"+strings.Join(strs, ","))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// assignedString renders a consumer member's assignment as
// topic:p,p,... topic:...; other protocol types show nothing.
func assignedString(a kadm.GroupMemberAssignment) string {
	ca, ok := a.AsConsumer()
	if !ok || ca == nil {
		return "-"
	}
	var parts []string
	for _, t := range ca.Topics {
		ps := append([]int32(nil), t.Partitions...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		strs := make([]string, len(ps))
		for i, p := range ps {
			strs[i] = fmt.Sprint(p)
		}
		parts = append(parts, t.Topic+":"+strings.Join(strs, ","))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func groupLag(ctx context.Context, adm *kadm.Client, _ *groupFlags, names []string, out io.Writer) error {
	if len(names) == 0 {
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			return err
		}
		names = listed.Groups()
		sort.Strings(names)
	}
	if len(names) == 0 {
		fmt.Fprintln(out, "no groups")
		return nil
	}
	lags, err := adm.Lag(ctx, names...)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tCOMMITTED\tLOG-END\tLAG\tMEMBER")
	var firstErr error
	for _, g := range lags.Sorted() {
		// A Dead group may still hold offsets committed from outside any
		// generation: only one without them is not found.
		state := g.State
		if len(g.Lag) > 0 {
			state = ""
		}
		if err := groupErr(g.Group, state, g.Error()); err != nil {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t%v\n", g.Group, err)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		for _, l := range g.Lag.Sorted() {
			member := "-"
			if l.Member != nil {
				member = l.Member.MemberID
			}
			lag := fmt.Sprint(l.Lag)
			if l.Err != nil {
				lag = l.Err.Error()
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\n", g.Group, l.Topic, l.Partition, offsetString(l.Commit.At), l.End.Offset, lag, member)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return firstErr
}

func groupDelete(ctx context.Context, adm *kadm.Client, _ *groupFlags, names []string, out io.Writer) error {
	resps, err := adm.DeleteGroups(ctx, names...)
	if err != nil {
		return err
	}
	var firstErr error
	for _, r := range resps.Sorted() {
		if err := groupErr(r.Group, "", r.Err); err != nil {
			fmt.Fprintln(out, err)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		fmt.Fprintf(out, "%s\tdeleted\n", r.Group)
	}
	return firstErr
}

// groupErr words what the brokers said of one group. A group they do not
// know is described as Dead with no error (Kafka's DescribeGroups before
// v6, which Floe serves) or refused with GROUP_ID_NOT_FOUND (DeleteGroups):
// both are "not found", as rpk says, rather than a bare state or code.
func groupErr(name, state string, err error) error {
	switch {
	case errors.Is(err, kerr.GroupIDNotFound):
		return groupNotFound(name)
	case err != nil:
		return fmt.Errorf("group %s: %w", name, err)
	case state == group.Dead.String():
		return groupNotFound(name)
	}
	return nil
}

func groupNotFound(name string) error { return fmt.Errorf("group %s not found", name) }

func offsetString(off int64) string {
	if off < 0 {
		return "-"
	}
	return fmt.Sprint(off)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// addGroupFlags adds floe serve's consumer group coordinator flags (Kafka's
// broker config names) and returns the config they make once parsed.
func addGroupFlags(fs *flag.FlagSet) func() group.Config {
	delay := fs.Int("group-initial-rebalance-delay-ms", 3000, "how long an empty group's first rebalance waits for more members (0: none)")
	minSession := fs.Int("group-min-session-timeout-ms", 6000, "smallest session timeout a member may ask for")
	maxSession := fs.Int("group-max-session-timeout-ms", 1800000, "largest session timeout a member may ask for")
	maxSize := fs.Int("group-max-size", 0, "most members a group may have (0: no limit)")
	cSession := fs.Int("group-consumer-session-timeout-ms", 45000, "KIP-848 consumer groups: a member's session timeout")
	cInterval := fs.Int("group-consumer-heartbeat-interval-ms", 5000, "KIP-848 consumer groups: the heartbeat interval members are told")
	cAssignors := fs.String("group-consumer-assignors", "uniform,range", "KIP-848 consumer groups: the server-side assignors, the first the default")
	cMax := fs.Int("group-consumer-max-size", 0, "KIP-848 consumer groups: most members a group may have (0: no limit)")
	policy := group.MigrationBidirectional
	fs.Func("group-consumer-migration-policy", "KIP-848 online migration of groups with members between the classic and the consumer protocol: bidirectional, upgrade, downgrade or disabled (default bidirectional)", func(s string) error {
		s = strings.ToLower(strings.TrimSpace(s))
		if err := group.CheckMigrationPolicy(s); err != nil {
			return err
		}
		policy = s
		return nil
	})
	return func() group.Config {
		c := group.Config{
			InitialRebalanceDelay: time.Duration(*delay) * time.Millisecond,
			SessionTimeoutMin:     time.Duration(*minSession) * time.Millisecond,
			SessionTimeoutMax:     time.Duration(*maxSession) * time.Millisecond,
			MembersMax:            *maxSize,

			ConsumerSessionTimeout:    time.Duration(*cSession) * time.Millisecond,
			ConsumerHeartbeatInterval: time.Duration(*cInterval) * time.Millisecond,
			ConsumerAssignors:         strings.Split(*cAssignors, ","),
			ConsumerMaxSize:           *cMax,
			ConsumerMigrationPolicy:   policy,
		}
		if *delay <= 0 {
			c.InitialRebalanceDelay = -1 // no delay (0 would mean the default)
		}
		return c
	}
}

// addTelemetryFlags adds floe serve's KIP-714 client telemetry flags.
func addTelemetryFlags(fs *flag.FlagSet) func() node.TelemetryConfig {
	metrics := fs.String("telemetry-metrics", strings.Join(node.DefaultTelemetryMetrics, ","), "KIP-714: metric name prefixes clients are asked to push (empty: none)")
	interval := fs.Int("telemetry-push-interval-ms", 30000, "KIP-714: how often clients push")
	maxBytes := fs.Int("telemetry-max-bytes", 1<<20, "KIP-714: largest push accepted")
	return func() node.TelemetryConfig {
		c := node.TelemetryConfig{Metrics: []string{}, PushInterval: time.Duration(*interval) * time.Millisecond, MaxBytes: int32(*maxBytes)}
		if *metrics != "" {
			c.Metrics = strings.Split(*metrics, ",")
		}
		return c
	}
}
