package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/audit"
)

func init() {
	addCommand("audit", "verify the audit log's hash chain", runAudit)
}

const auditUsage = `usage: floe audit verify [flags]

Reads every partition of the audit log from its first record to its end
(as it is when the command starts) and checks the hash chain: each record's
unmapped.floe.prev_sha256 must be the SHA-256 of the record before it. Names
the first break (partition, offset, what is wrong) and exits 1; otherwise
prints each partition's record count and last hash, to keep elsewhere
(a chain cannot tell that its newest records were cut off).

flags:
  --topic    the topic to verify (default __audit_log)
  --brokers  comma-separated seed brokers (default 127.0.0.1:9092)
  --timeout  how long to wait for the cluster (default 1m)

Reading the audit log needs READ on its topic (super users, the admin role,
or an ACL naming __audit_log).
`

func runAudit(args []string) error { return auditMain(args, os.Stdout) }

// errChainBroken is what verify returns when the chain does not hold.
var errChainBroken = errors.New("audit log chain broken")

func auditMain(args []string, out io.Writer) error {
	action, fs, cf, err := beginAction("audit", auditUsage, []string{"verify"}, args, time.Minute)
	if action == "" {
		return err
	}
	topic := fs.String("topic", node.AuditTopic, "the topic to verify")
	rest, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("verify takes flags only, got %v", rest)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *cf.timeout)
	defer cancel()
	return cf.explain(verifyAudit(ctx, cf, *topic, out))
}

// verifyAudit reads topic from its start to its end offsets and checks its
// chains.
func verifyAudit(ctx context.Context, cf *clientFlags, topic string, out io.Writer) error {
	admCl, err := cf.client()
	if err != nil {
		return err
	}
	starts, ends, err := listOffsets(ctx, kadm.NewClient(admCl), topic)
	admCl.Close()
	if err != nil {
		return err
	}
	plan := &readPlan{pos: map[int32]int64{}, end: map[int32]int64{}}
	from := map[int32]kgo.Offset{}
	for p, e := range ends[topic] {
		s, _ := starts.Lookup(topic, p)
		plan.pos[p], plan.end[p] = s.Offset, e.Offset
		from[p] = kgo.NewOffset().At(s.Offset)
	}
	cl, err := cf.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}), kgo.FetchMaxWait(fetchWaitMax))
	if err != nil {
		return err
	}
	defer cl.Close()
	v := audit.NewVerifier()
	var brk *audit.Break
	for !plan.done() {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("reading %s: %w", topic, ctx.Err())
		}
		for _, fe := range fetches.Errors() {
			return fmt.Errorf("%s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
		}
		for it := fetches.RecordIter(); !it.Done(); {
			r := it.Next()
			if r.Offset >= plan.end[r.Partition] {
				continue // written after verify started
			}
			if b := v.Next(r.Partition, r.Offset, r.Value); b != nil && (brk == nil || b.Partition < brk.Partition) {
				brk = b
			}
			plan.advance(r.Partition, r.Offset+1)
		}
	}
	parts := make([]int32, 0, len(plan.end))
	for p := range plan.end {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	heads := map[int32]audit.Head{}
	for _, h := range v.Heads() {
		heads[h.Partition] = h
	}
	for _, p := range parts {
		s, _ := starts.Lookup(topic, p)
		switch h, ok := heads[p]; {
		case brk != nil && brk.Partition == p:
			fmt.Fprintf(out, "partition %d: BROKEN at offset %d: %s\n", p, brk.Offset, brk.Why)
		case !ok:
			fmt.Fprintf(out, "partition %d: empty\n", p)
		default:
			fmt.Fprintf(out, "partition %d: offsets %d to %d, chain holds, last sha256 %s\n", p, s.Offset, h.Offset, h.SHA256)
		}
	}
	if brk != nil {
		return fmt.Errorf("%w: %v", errChainBroken, brk)
	}
	fmt.Fprintf(out, "%d records verified\n", v.Records())
	return nil
}
