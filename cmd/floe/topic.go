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
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	addCommand("topic", "create, list, describe, alter or delete topics", runTopic)
}

const topicUsage = `usage: floe topic <action> [flags] [topic ...]

actions:
  create TOPIC...    --partitions N  --replication-factor R  --config k=v ...
                     --if-not-exists
  list               every topic: partitions, replication factor
                     --internal also lists internal topics
  describe TOPIC...  partitions (leader, replicas, ISR, offsets) and configs
                     --all-configs lists every config, not only those set
  alter TOPIC...     --config k=v ...  --delete-config k ...  --partitions N
                     --validate-only checks without changing anything
  delete TOPIC...    --if-exists

common flags:
  --brokers  comma-separated seed brokers (default 127.0.0.1:9092)
  --command-config  Kafka client properties file (TLS, SASL; docs/security.md)
  --timeout  how long to wait for the cluster (default 10s)

Flags and topic names may come in any order. Every flag can also come from
FLOE_<NAME> (FLOE_BROKERS for --brokers); a config file of flag values can
be named by FLOE_CONFIG (--config is the topic config flag here).
Partitions and replication factor default to the brokers' defaults.
`

// topicAction is one floe topic action: its flags, and what it does with
// the topics named once they are parsed.
type topicAction struct {
	flags func(fs *flag.FlagSet) func(ctx context.Context, adm *kadm.Client, names []string, out io.Writer) error
	// minNames is how many topic names the action needs.
	minNames int
}

var topicActions = map[string]topicAction{
	"create":   {flags: topicCreateFlags, minNames: 1},
	"list":     {flags: topicListFlags},
	"describe": {flags: topicDescribeFlags, minNames: 1},
	"alter":    {flags: topicAlterFlags, minNames: 1},
	"delete":   {flags: topicDeleteFlags, minNames: 1},
}

func runTopic(args []string) error { return topicMain(args, os.Stdout) }

func topicMain(args []string, out io.Writer) error {
	name, fs, cf, err := beginAction("topic", topicUsage, []string{"create", "list", "describe", "alter", "delete"}, args, 10*time.Second)
	if name == "" {
		return err
	}
	action := topicActions[name]
	run := action.flags(fs)
	names, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	switch {
	case len(names) < action.minNames:
		return usagef("%s: name at least one topic", args[0])
	case action.minNames == 0 && len(names) > 0:
		return usagef("%s takes no topic names, got %s", args[0], strings.Join(names, " "))
	}
	cl, err := cf.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *cf.timeout)
	defer cancel()
	return cf.explain(run(ctx, kadm.NewClient(cl), names, out))
}

func topicCreateFlags(fs *flag.FlagSet) func(context.Context, *kadm.Client, []string, io.Writer) error {
	partitions := fs.Int("partitions", -1, "partitions (-1: the brokers' default)")
	rf := fs.Int("replication-factor", -1, "replicas per partition (-1: the brokers' default)")
	ifNotExists := fs.Bool("if-not-exists", false, "a topic that exists already is not an error")
	var configs kvList
	fs.Var(&configs, "config", "topic config `name=value` (repeatable)")
	return func(ctx context.Context, adm *kadm.Client, names []string, out io.Writer) error {
		if *partitions == 0 || *partitions < -1 || *rf == 0 || *rf < -1 || *rf > 1<<15-1 {
			return usagef("--partitions and --replication-factor must be positive (or -1 for the brokers' default)")
		}
		cfg := map[string]*string{}
		for _, n := range configs.names {
			v := configs.values[n]
			cfg[n] = &v
		}
		resps, err := adm.CreateTopics(ctx, int32(*partitions), int16(*rf), cfg, names...)
		if err != nil {
			return err
		}
		report := topicReport[kadm.CreateTopicResponse]{
			answer: func(r kadm.CreateTopicResponse) (error, string) { return r.Err, r.ErrMessage },
			done: func(name string, r kadm.CreateTopicResponse) string {
				return fmt.Sprintf("created topic %s: %d partitions, replication factor %d", name, r.NumPartitions, r.ReplicationFactor)
			},
		}
		if *ifNotExists {
			report.benign, report.note = kerr.TopicAlreadyExists, "exists already"
		}
		return report.write(out, names, resps)
	}
}

func topicListFlags(fs *flag.FlagSet) func(context.Context, *kadm.Client, []string, io.Writer) error {
	internal := fs.Bool("internal", false, "also list internal topics (__consumer_offsets)")
	return func(ctx context.Context, adm *kadm.Client, _ []string, out io.Writer) error {
		list := adm.ListTopics
		if *internal {
			list = adm.ListTopicsWithInternal
		}
		topics, err := list(ctx)
		if err != nil {
			return err
		}
		return writeTopicList(out, topics)
	}
}

func writeTopicList(out io.Writer, topics kadm.TopicDetails) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITIONS\tREPLICATION-FACTOR")
	for _, t := range topics.Sorted() {
		if t.Err != nil {
			fmt.Fprintf(tw, "%s\t-\t%v\n", t.Topic, t.Err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\n", t.Topic, len(t.Partitions), t.Partitions.NumReplicas())
	}
	return tw.Flush()
}

func topicDescribeFlags(fs *flag.FlagSet) func(context.Context, *kadm.Client, []string, io.Writer) error {
	all := fs.Bool("all-configs", false, "list every config with its source, not only those set on the topic")
	return func(ctx context.Context, adm *kadm.Client, names []string, out io.Writer) error {
		topics, err := adm.ListTopicsWithInternal(ctx, names...)
		if err != nil {
			return err
		}
		configs, err := adm.DescribeTopicConfigs(ctx, names...)
		if err != nil {
			return err
		}
		// Offsets are a nicety: a partition without a leader shows "-".
		starts, _ := adm.ListStartOffsets(ctx, names...)
		ends, _ := adm.ListEndOffsets(ctx, names...)
		var failed error
		for i, name := range names {
			if i > 0 {
				fmt.Fprintln(out)
			}
			t, ok := topics[name]
			if !ok || t.Err != nil {
				var err error = kerr.UnknownTopicOrPartition
				if ok {
					err = t.Err
				}
				fmt.Fprintf(out, "TOPIC %s: %v\n", name, err)
				failed = firstErr(failed, fmt.Errorf("topic %s: %w", name, err))
				continue
			}
			rc, _ := configs.On(name, nil)
			if err := writeTopicDescription(out, t, rc, starts, ends, *all); err != nil {
				return err
			}
		}
		return failed
	}
}

func writeTopicDescription(out io.Writer, t kadm.TopicDetail, rc kadm.ResourceConfig, starts, ends kadm.ListedOffsets, all bool) error {
	fmt.Fprintf(out, "TOPIC %s  ID %s  PARTITIONS %d  REPLICATION-FACTOR %d", t.Topic, t.ID, len(t.Partitions), t.Partitions.NumReplicas())
	if t.IsInternal {
		fmt.Fprint(out, "  INTERNAL")
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tSTART-OFFSET\tEND-OFFSET")
	for _, p := range t.Partitions.Sorted() {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\n", p.Partition, leaderString(p.Leader), p.LeaderEpoch,
			idList(p.Replicas), idList(p.ISR), listedOffset(starts, t.Topic, p.Partition), listedOffset(ends, t.Topic, p.Partition))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rc.Err != nil {
		fmt.Fprintf(out, "CONFIGS: %v\n", kafkaErr(rc.Err, rc.ErrMessage))
		return nil
	}
	shown := 0
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONFIG\tVALUE\tSOURCE")
	for _, c := range sortedConfigs(rc.Configs) {
		if !all && c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Key, c.MaybeValue(), sourceName(c.Source))
		shown++
	}
	if shown == 0 {
		fmt.Fprintln(out, "CONFIGS: none set on the topic (--all-configs lists the effective values)")
		return nil
	}
	return tw.Flush()
}

func sortedConfigs(cs []kadm.Config) []kadm.Config {
	out := append([]kadm.Config(nil), cs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// sourceName says where a config value comes from, in Floe's words.
func sourceName(s kmsg.ConfigSource) string {
	switch s {
	case kmsg.ConfigSourceDynamicTopicConfig:
		return "topic"
	case kmsg.ConfigSourceDynamicDefaultBrokerConfig:
		return "cluster default"
	case kmsg.ConfigSourceDynamicBrokerConfig:
		return "broker (dynamic)"
	case kmsg.ConfigSourceStaticBrokerConfig:
		return "broker default"
	case kmsg.ConfigSourceDefaultConfig:
		return "default"
	}
	return s.String()
}

func leaderString(id int32) string {
	if id < 0 {
		return "none"
	}
	return fmt.Sprint(id)
}

func idList(ids []int32) string {
	if len(ids) == 0 {
		return "-"
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return strings.Join(parts, ",")
}

func listedOffset(os kadm.ListedOffsets, topic string, partition int32) string {
	o, ok := os.Lookup(topic, partition)
	if !ok || o.Err != nil {
		return "-"
	}
	return fmt.Sprint(o.Offset)
}

func topicAlterFlags(fs *flag.FlagSet) func(context.Context, *kadm.Client, []string, io.Writer) error {
	var set kvList
	var del listFlag
	fs.Var(&set, "config", "set a topic config: `name=value` (repeatable)")
	fs.Var(&del, "delete-config", "remove a topic config, back to its default: `name` (repeatable)")
	partitions := fs.Int("partitions", 0, "grow the topic to this many partitions")
	validateOnly := fs.Bool("validate-only", false, "check the change without making it")
	return func(ctx context.Context, adm *kadm.Client, names []string, out io.Writer) error {
		ops, err := alterOps(set, del)
		if err != nil {
			return err
		}
		if len(ops) == 0 && *partitions == 0 {
			return usagef("alter: nothing to change (--config, --delete-config, --partitions)")
		}
		if *partitions < 0 {
			return usagef("--partitions must be positive")
		}
		verb := "altered"
		if *validateOnly {
			verb = "valid"
		}
		var failed error
		if len(ops) > 0 {
			alter := adm.AlterTopicConfigs
			if *validateOnly {
				alter = adm.ValidateAlterTopicConfigs
			}
			resps, err := alter(ctx, ops, names...)
			if err != nil {
				return err
			}
			for _, name := range names {
				r, err := resps.On(name, nil)
				if err == nil {
					err = kafkaErr(r.Err, r.ErrMessage)
				}
				if err != nil {
					failed = firstErr(failed, fmt.Errorf("topic %s: configs: %w", name, err))
					continue
				}
				fmt.Fprintf(out, "%s topic %s: %s\n", verb, name, describeOps(ops))
			}
		}
		if *partitions > 0 {
			grow := adm.UpdatePartitions
			if *validateOnly {
				grow = adm.ValidateUpdatePartitions
			}
			resps, err := grow(ctx, *partitions, names...)
			if err != nil {
				return err
			}
			failed = firstErr(failed, topicReport[kadm.CreatePartitionsResponse]{
				answer: func(r kadm.CreatePartitionsResponse) (error, string) { return r.Err, r.ErrMessage },
				prefix: "partitions: ",
				done: func(name string, _ kadm.CreatePartitionsResponse) string {
					return fmt.Sprintf("%s topic %s: %d partitions", verb, name, *partitions)
				},
			}.write(out, names, resps))
		}
		return failed
	}
}

// alterOps turns --config and --delete-config into incremental operations.
func alterOps(set kvList, del listFlag) ([]kadm.AlterConfig, error) {
	var ops []kadm.AlterConfig
	for _, n := range set.names {
		v := set.values[n]
		ops = append(ops, kadm.AlterConfig{Op: kadm.SetConfig, Name: n, Value: &v})
	}
	for _, n := range del {
		if _, both := set.values[n]; both {
			return nil, usagef("%s is both set and deleted", n)
		}
		ops = append(ops, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: n})
	}
	return ops, nil
}

func describeOps(ops []kadm.AlterConfig) string {
	parts := make([]string, len(ops))
	for i, op := range ops {
		if op.Op == kadm.DeleteConfig {
			parts[i] = "deleted " + op.Name
		} else {
			parts[i] = "set " + op.Name + "=" + *op.Value
		}
	}
	return strings.Join(parts, ", ")
}

func topicDeleteFlags(fs *flag.FlagSet) func(context.Context, *kadm.Client, []string, io.Writer) error {
	ifExists := fs.Bool("if-exists", false, "a topic that does not exist is not an error")
	return func(ctx context.Context, adm *kadm.Client, names []string, out io.Writer) error {
		resps, err := adm.DeleteTopics(ctx, names...)
		if err != nil {
			return err
		}
		report := topicReport[kadm.DeleteTopicResponse]{
			answer: func(r kadm.DeleteTopicResponse) (error, string) { return r.Err, r.ErrMessage },
			done:   func(name string, _ kadm.DeleteTopicResponse) string { return "deleted topic " + name },
		}
		if *ifExists {
			report.benign, report.note = kerr.UnknownTopicOrPartition, "does not exist"
		}
		return report.write(out, names, resps)
	}
}

// topicReport says how to report a create, delete or partition change,
// topic by topic, from kadm's answers of type R.
type topicReport[R any] struct {
	answer func(R) (err error, msg string) // a topic's error and message
	benign error                           // an error a flag makes a note (nil: none)
	note   string                          // the note: "topic NAME <note>"
	prefix string                          // before a failure's error: "topic NAME: <prefix>error"
	done   func(name string, r R) string   // the line for a success
}

// write writes a line for each named topic and returns the first failure
// (a topic missing from the answer, or one that failed).
func (tr topicReport[R]) write(out io.Writer, names []string, resps map[string]R) error {
	var failed error
	for _, name := range names {
		r, ok := resps[name]
		if !ok {
			failed = firstErr(failed, fmt.Errorf("topic %s: not in the answer", name))
			continue
		}
		err, msg := tr.answer(r)
		switch {
		case tr.benign != nil && errors.Is(err, tr.benign):
			fmt.Fprintf(out, "topic %s %s\n", name, tr.note)
		case err != nil:
			failed = firstErr(failed, fmt.Errorf("topic %s: %s%w", name, tr.prefix, kafkaErr(err, msg)))
		default:
			fmt.Fprintln(out, tr.done(name, r))
		}
	}
	return failed
}

func firstErr(have, err error) error {
	if have != nil {
		return have
	}
	return err
}
