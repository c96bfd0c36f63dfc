package main

// floe dlq: the dead letters of a share group (issue 18). The broker
// copies a record a consumer rejects, or that reaches the delivery limit,
// to the group's dead-letter topic (the group config
// errors.deadletterqueue.topic.name; node/share_dlq.go) with headers naming
// where it came from. list shows them; redrive produces them again to
// their source topic and partition, their own headers kept and the
// dead-letter headers dropped, so the group gets them as new records.
//
// redrive remembers how far it went as the committed offsets of the
// consumer group "floe-dlq-redrive.GROUP" on the dead-letter topic, so a
// second run sends only the dead letters that arrived since (--from-beginning
// sends all again). A record is committed only after its copy was
// acknowledged by the source partition (acks=all): a redrive cut short
// sends at most the uncommitted ones again (at least once).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	addCommand("dlq", "list a share group's dead letters, or redrive them to their source topic", runDLQ)
}

const dlqUsage = `usage: floe dlq <action> [flags] GROUP

actions:
  list GROUP      the group's dead letters: where each came from (topic,
                  partition, offset), its delivery count, why (rejected or
                  delivery-limit), when, its key and value
  redrive GROUP   produce them again to their source topic and partition
                  (replay is the same), without the dead-letter headers; a
                  later redrive sends only the dead letters that came since;
                  dead letters written without their record (the group's
                  errors.deadletterqueue.copy.record.enable=false) are
                  skipped and named

flags:
  --brokers         comma-separated seed brokers (default 127.0.0.1:9092)
  --command-config  Kafka client properties file (TLS, SASL; docs/security.md)
  --topic           the dead-letter topic (default: the group's
                    errors.deadletterqueue.topic.name)
  --from-beginning  redrive: every dead letter, not only those not redriven yet
  --dry-run         redrive: print what would be sent, send nothing
  --timeout         how long to wait for the cluster (default 30s)

The dead-letter topic may be shared by several groups: only the records
whose __dlq.errors.group.id header names GROUP are listed or redriven.
redrive keeps its progress in the consumer group floe-dlq-redrive.GROUP.
`

// The dead-letter headers the broker adds (node/share_dlq.go).
const dlqHeaderPrefix = "__dlq.errors."

type dlqFlags struct {
	*clientFlags
	topic         *string
	fromBeginning *bool
	dryRun        *bool
}

func runDLQ(args []string) error { return dlqMain(args, os.Stdout) }

func dlqMain(args []string, out io.Writer) error {
	action, fs, cf, err := beginAction("dlq", dlqUsage, []string{"list", "redrive", "replay"}, args, 30*time.Second)
	if action == "" {
		return err
	}
	df := &dlqFlags{clientFlags: cf,
		topic:         fs.String("topic", "", "the dead-letter topic (default: the group's errors.deadletterqueue.topic.name)"),
		fromBeginning: fs.Bool("from-beginning", false, "redrive: every dead letter, not only those not redriven yet"),
		dryRun:        fs.Bool("dry-run", false, "redrive: print what would be sent, send nothing"),
	}
	names, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	if len(names) != 1 || names[0] == "" {
		return usagef("floe dlq %s takes one group, got %d: %s", action, len(names), strings.Join(names, " "))
	}
	group := names[0]
	cl, err := df.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *df.timeout)
	defer cancel()
	adm := kadm.NewClient(cl)
	topic := *df.topic
	if topic == "" {
		if topic, err = dlqTopicOf(ctx, cl, group); err != nil {
			return df.explain(err)
		}
	}
	if action == "list" {
		return df.explain(dlqList(ctx, df, adm, group, topic, out))
	}
	return df.explain(dlqRedrive(ctx, df, adm, group, topic, out))
}

// dlqTopicOf reads the group's dead-letter topic from its configs (a
// DescribeConfigs of the GROUP resource).
func dlqTopicOf(ctx context.Context, cl *kgo.Client, group string) (string, error) {
	const name = "errors.deadletterqueue.topic.name"
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, []string{name}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return "", err
	}
	if len(resp.Resources) != 1 {
		return "", fmt.Errorf("describe configs of group %s: %d resources answered", group, len(resp.Resources))
	}
	res := resp.Resources[0]
	if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
		return "", kafkaErr(err, strDeref(res.ErrorMessage))
	}
	for _, c := range res.Configs {
		if c.Name == name && c.Value != nil && *c.Value != "" {
			return *c.Value, nil
		}
	}
	return "", fmt.Errorf("group %s has no dead-letter topic (%s is not set; or name one with --topic)", group, name)
}

// deadLetter is one record of the dead-letter topic.
type deadLetter struct {
	rec    *kgo.Record
	source string // topic
	part   int32
	offset int64
	count  string
	reason string
	timeMs int64
}

func parseDeadLetter(r *kgo.Record) (deadLetter, string, bool) {
	d := deadLetter{rec: r}
	h := map[string]string{}
	for _, x := range r.Headers {
		h[x.Key] = string(x.Value)
	}
	p, err1 := strconv.ParseInt(h[dlqHeaderPrefix+"partition"], 10, 32)
	off, err2 := strconv.ParseInt(h[dlqHeaderPrefix+"offset"], 10, 64)
	d.timeMs, _ = strconv.ParseInt(h[dlqHeaderPrefix+"timestamp"], 10, 64)
	d.source, d.part, d.offset = h[dlqHeaderPrefix+"topic"], int32(p), off
	d.count, d.reason = h[dlqHeaderPrefix+"delivery.count"], h[dlqHeaderPrefix+"reason"]
	return d, h[dlqHeaderPrefix+"group.id"], err1 == nil && err2 == nil && d.source != ""
}

// readDeadLetters reads topic from the given offsets (every partition's
// start when nil) up to the end offsets it has now, and returns the
// group's dead letters in (partition, offset) order and the offsets to
// resume from.
func readDeadLetters(ctx context.Context, df *dlqFlags, adm *kadm.Client, group, topic string, from map[int32]int64) ([]deadLetter, map[int32]int64, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, nil, err
	}
	if err := ends.Error(); err != nil {
		return nil, nil, fmt.Errorf("dead-letter topic %s: %w", topic, err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, nil, err
	}
	offsets := map[string]map[int32]kgo.Offset{topic: {}}
	next := map[int32]int64{}
	left := 0
	ends.Each(func(o kadm.ListedOffset) {
		at := from[o.Partition]
		if s, ok := starts.Lookup(topic, o.Partition); ok && s.Offset > at {
			at = s.Offset // deleted by retention meanwhile
		}
		next[o.Partition] = max(at, 0)
		if at < o.Offset {
			offsets[topic][o.Partition] = kgo.NewOffset().At(at)
			left++
		}
	})
	if left == 0 {
		return nil, next, nil
	}
	cl, err := df.client(kgo.ConsumePartitions(offsets))
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	var out []deadLetter
	for left > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				return nil, nil, fmt.Errorf("reading %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, _ := ends.Lookup(topic, r.Partition)
			if r.Offset >= end.Offset || r.Offset < next[r.Partition] {
				return
			}
			next[r.Partition] = r.Offset + 1
			if next[r.Partition] >= end.Offset {
				left--
			}
			if d, g, ok := parseDeadLetter(r); ok && g == group {
				out = append(out, d)
			}
		})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].rec.Partition != out[j].rec.Partition {
			return out[i].rec.Partition < out[j].rec.Partition
		}
		return out[i].rec.Offset < out[j].rec.Offset
	})
	return out, next, nil
}

func dlqList(ctx context.Context, df *dlqFlags, adm *kadm.Client, group, topic string, out io.Writer) error {
	dead, _, err := readDeadLetters(ctx, df, adm, group, topic, nil)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DLQ-PARTITION\tDLQ-OFFSET\tSOURCE\tDELIVERIES\tREASON\tTIME\tKEY\tVALUE")
	for _, d := range dead {
		when := "-"
		if d.timeMs > 0 {
			when = time.UnixMilli(d.timeMs).UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s/%d@%d\t%s\t%s\t%s\t%s\t%s\n", d.rec.Partition, d.rec.Offset, d.source, d.part, d.offset,
			orDash(d.count), orDash(d.reason), when, shown(d.rec.Key), shown(d.rec.Value))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d dead letters of group %s in %s\n", len(dead), group, topic)
	return nil
}

// shown prints a key or value on one line: null as "-", at most 60 bytes.
func shown(b []byte) string {
	if b == nil {
		return "-"
	}
	s := strconv.Quote(string(b))
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// redriveGroup is where redrive keeps its progress.
func redriveGroup(group string) string { return "floe-dlq-redrive." + group }

func dlqRedrive(ctx context.Context, df *dlqFlags, adm *kadm.Client, group, topic string, out io.Writer) error {
	from := map[int32]int64{}
	if !*df.fromBeginning {
		committed, err := adm.FetchOffsets(ctx, redriveGroup(group))
		if err != nil {
			return err
		}
		committed.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic && o.Err == nil && o.At >= 0 {
				from[o.Partition] = o.At
			}
		})
	}
	dead, next, err := readDeadLetters(ctx, df, adm, group, topic, from)
	if err != nil {
		return err
	}
	prod, err := df.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return err
	}
	defer prod.Close()
	skipped := 0
	for _, d := range dead {
		if !hasRecord(d.rec) {
			// errors.deadletterqueue.copy.record.enable=false: the dead
			// letter names the record but does not hold it.
			skipped++
			fmt.Fprintf(out, "skipped %s/%d@%d: no copy of the record (the group's errors.deadletterqueue.copy.record.enable was false); it was %s/%d@%d\n",
				topic, d.rec.Partition, d.rec.Offset, d.source, d.part, d.offset)
			if !*df.dryRun {
				if err := commitRedrive(ctx, adm, group, topic, d.rec.Partition, d.rec.Offset+1); err != nil {
					return err
				}
			}
			continue
		}
		r := &kgo.Record{Topic: d.source, Partition: d.part, Key: d.rec.Key, Value: d.rec.Value}
		for _, h := range d.rec.Headers {
			if !strings.HasPrefix(h.Key, dlqHeaderPrefix) {
				r.Headers = append(r.Headers, h)
			}
		}
		if *df.dryRun {
			fmt.Fprintf(out, "would send %s/%d@%d to %s/%d\n", topic, d.rec.Partition, d.rec.Offset, d.source, d.part)
			continue
		}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			return fmt.Errorf("redrive %s/%d@%d to %s/%d: %w", topic, d.rec.Partition, d.rec.Offset, d.source, d.part, err)
		}
		// Committed one by one: a redrive cut short resends only what
		// it had not confirmed.
		if err := commitRedrive(ctx, adm, group, topic, d.rec.Partition, d.rec.Offset+1); err != nil {
			return err
		}
		fmt.Fprintf(out, "sent %s/%d@%d to %s/%d (was offset %d, %s)\n", topic, d.rec.Partition, d.rec.Offset, d.source, d.part, d.offset, orDash(d.reason))
	}
	if *df.dryRun {
		fmt.Fprintf(out, "%d dead letters would be redriven\n", len(dead)-skipped)
		return nil
	}
	// Past the other groups' records too.
	for _, p := range sortedPartitions(next) {
		if err := commitRedrive(ctx, adm, group, topic, p, next[p]); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "redrove %d dead letters of group %s from %s\n", len(dead)-skipped, group, topic)
	if skipped > 0 {
		fmt.Fprintf(out, "%d dead letters hold no copy of their record and were skipped\n", skipped)
	}
	return nil
}

// hasRecord reports whether a dead letter holds its record: a key, a value
// or a header of its own. One written under the group's
// errors.deadletterqueue.copy.record.enable=false has the __dlq.errors.*
// headers only (a record that was itself empty, null key and value and no
// headers, looks the same and is skipped too).
func hasRecord(r *kgo.Record) bool {
	if r.Key != nil || r.Value != nil {
		return true
	}
	for _, h := range r.Headers {
		if !strings.HasPrefix(h.Key, dlqHeaderPrefix) {
			return true
		}
	}
	return false
}

func commitRedrive(ctx context.Context, adm *kadm.Client, group, topic string, part int32, next int64) error {
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: part, At: next, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(ctx, redriveGroup(group), offs)
	if err != nil {
		return err
	}
	return resp.Error()
}

func sortedPartitions(m map[int32]int64) []int32 {
	ps := make([]int32, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}
