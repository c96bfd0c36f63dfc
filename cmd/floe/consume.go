package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	addCommand("consume", "print records to stdout (kcat -C style)", runConsume)
}

const consumeUsage = `usage: floe consume TOPIC [flags]

Prints each record of TOPIC in --format, in offset order within a
partition. Flags (in any order with TOPIC):
  --topic           the topic, as a flag instead of TOPIC
  --partition       read only this partition
  --from-beginning  start at the log start (same as --offset beginning)
  --offset          where to start: beginning, end (default), an offset N,
                    or -N for N records before each partition's end
  --group           read as a member of this consumer group: start at its
                    committed offsets (--offset applies where it has none)
                    and commit what was printed when stopping
  --count           stop after this many records
  --exit-at-end     stop once every partition is read up to where it ended
                    when consume started (with --group, this assumes the
                    only member)
  --format          per record (default '%v'); a newline follows unless
                    the format ends with one:
                      %t topic  %p partition  %o offset  %k key  %v value
                      %T timestamp (ms)  %h headers (k=v,...)
                      %K key length  %S value length  %% a percent sign
                      \n \t \r \\ are escapes
  --brokers         comma-separated seed brokers (default 127.0.0.1:9092)
  --command-config  Kafka client properties (TLS, SASL): see docs/security.md
  --timeout         how long to wait for the cluster when starting and when
                    committing (default 10s)

Ctrl-C (or SIGTERM) stops cleanly, committing with --group.
`

func runConsume(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return consumeMain(ctx, args, os.Stdout)
}

// consumeConfig is a parsed floe consume invocation.
type consumeConfig struct {
	topic     string
	partition int32 // -1: every partition
	start     startSpec
	group     string
	count     int
	exitAtEnd bool
	format    []formatPart
}

func parseConsumeArgs(args []string) (consumeConfig, *clientFlags, error) {
	fs := flag.NewFlagSet("floe consume", flag.ContinueOnError)
	fs.Usage = func() { io.WriteString(os.Stderr, consumeUsage) }
	cf := addClientFlags(fs, 10*time.Second)
	topic := fs.String("topic", "", "topic to read")
	partition := fs.Int("partition", -1, "read only this partition")
	fromBeginning := fs.Bool("from-beginning", false, "start at the log start")
	offset := fs.String("offset", "", "beginning, end, N or -N")
	group := fs.String("group", "", "consumer group to read as")
	count := fs.Int("count", 0, "stop after this many records (0: no limit)")
	exitAtEnd := fs.Bool("exit-at-end", false, "stop at the end of every partition")
	format := fs.String("format", "%v", "output format per record")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return consumeConfig{}, nil, err
	}
	cc := consumeConfig{partition: -1, group: *group, count: *count, exitAtEnd: *exitAtEnd}
	if cc.topic, err = topicArg("consume", *topic, rest); err != nil {
		return cc, nil, err
	}
	switch {
	case *partition < -1 || *partition > 1<<31-1:
		return cc, nil, usagef("--partition %d: want a partition number", *partition)
	case *partition >= 0 && cc.group != "":
		return cc, nil, usagef("--partition and --group do not mix: a group assigns partitions to its members")
	case cc.count < 0:
		return cc, nil, usagef("--count must not be negative")
	case *fromBeginning && *offset != "":
		return cc, nil, usagef("give --from-beginning or --offset, not both")
	}
	cc.partition = int32(*partition)
	if *fromBeginning {
		*offset = "beginning"
	}
	if cc.start, err = parseStart(*offset); err != nil {
		return cc, nil, err
	}
	if cc.format, err = parseFormat(*format); err != nil {
		return cc, nil, err
	}
	return cc, cf, nil
}

func consumeMain(ctx context.Context, args []string, out io.Writer) error {
	cc, cf, err := parseConsumeArgs(args)
	if err != nil {
		return err
	}
	var plan *readPlan
	if cc.exitAtEnd {
		if plan, err = cc.plan(ctx, cf); err != nil || plan.done() {
			return err // nothing to read: no need to join a group
		}
	}
	cl, err := cf.client(cc.clientOpts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	w := bufio.NewWriterSize(out, 64<<10)
	err = consumeLoop(ctx, cl, cc, plan, w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if cc.group != "" {
		cctx, cancel := context.WithTimeout(context.Background(), *cf.timeout)
		defer cancel()
		if cerr := cl.CommitMarkedOffsets(cctx); cerr != nil && err == nil {
			err = fmt.Errorf("committing: %w", cf.explain(cerr))
		}
	}
	return err
}

// plan finds, for --exit-at-end, where reading starts and must end, with a
// client of its own (a group member is only needed if there is something
// to read).
func (cc consumeConfig) plan(ctx context.Context, cf *clientFlags) (*readPlan, error) {
	cl, err := cf.client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, *cf.timeout)
	defer cancel()
	plan, err := planRead(pctx, kadm.NewClient(cl), cc)
	return plan, cf.explain(err)
}

// fetchWaitMax bounds a fetch's long poll. The client adds a partition
// whose start it has just resolved only to its next fetch, so a long poll
// on the others would hold that partition's records back for as long.
const fetchWaitMax = 500 * time.Millisecond

func (cc consumeConfig) clientOpts() []kgo.Opt {
	off := cc.start.kgoOffset()
	opts := []kgo.Opt{kgo.FetchMaxWait(fetchWaitMax)}
	if cc.partition >= 0 {
		return append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cc.topic: {cc.partition: off}}))
	}
	opts = append(opts, kgo.ConsumeTopics(cc.topic), kgo.ConsumeResetOffset(off))
	if cc.group != "" {
		opts = append(opts, kgo.ConsumerGroup(cc.group), kgo.AutoCommitMarks())
	}
	return opts
}

// consumeLoop prints records until the count is reached, every partition
// is at its end (with a plan), or ctx ends.
func consumeLoop(ctx context.Context, cl *kgo.Client, cc consumeConfig, plan *readPlan, w *bufio.Writer) error {
	printed := 0
	for plan == nil || !plan.done() {
		max := 0
		if cc.count > 0 {
			max = cc.count - printed
		}
		fetches := cl.PollRecords(ctx, max)
		if ctx.Err() != nil {
			return nil // stopped by a signal: not an error
		}
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, kgo.ErrClientClosed) {
				return nil
			}
			return fmt.Errorf("%s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
		}
		for it := fetches.RecordIter(); !it.Done(); {
			r := it.Next()
			writeRecord(w, cc.format, r)
			if cc.group != "" {
				cl.MarkCommitRecords(r)
			}
			if plan != nil {
				plan.advance(r.Partition, r.Offset+1)
			}
			printed++
			if cc.count > 0 && printed >= cc.count {
				return nil
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// startSpec is where reading starts in a partition without a commit.
type startSpec struct {
	kind startKind
	n    int64 // the offset (startExact) or the distance (startBeforeEnd)
}

type startKind int

const (
	startEnd startKind = iota
	startBeginning
	startExact
	startBeforeEnd
)

func parseStart(s string) (startSpec, error) {
	switch s {
	case "", "end":
		return startSpec{kind: startEnd}, nil
	case "beginning":
		return startSpec{kind: startBeginning}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return startSpec{}, usagef("--offset %q: want beginning, end, an offset N or -N", s)
	}
	if n < 0 {
		return startSpec{kind: startBeforeEnd, n: -n}, nil
	}
	return startSpec{kind: startExact, n: n}, nil
}

func (s startSpec) kgoOffset() kgo.Offset {
	switch s.kind {
	case startBeginning:
		return kgo.NewOffset().AtStart()
	case startExact:
		return kgo.NewOffset().At(s.n)
	case startBeforeEnd:
		return kgo.NewOffset().AtEnd().Relative(-s.n)
	}
	return kgo.NewOffset().AtEnd()
}

// position is where reading starts in a partition whose log holds
// [start, end).
func (s startSpec) position(start, end int64) int64 {
	var p int64
	switch s.kind {
	case startBeginning:
		p = start
	case startExact:
		p = s.n
	case startBeforeEnd:
		p = end - s.n
	default:
		p = end
	}
	return min(max(p, start), end)
}

// readPlan tracks, for --exit-at-end, each partition's read position
// against where it ended when consume started.
type readPlan struct {
	pos, end map[int32]int64
}

func planRead(ctx context.Context, adm *kadm.Client, cc consumeConfig) (*readPlan, error) {
	starts, ends, err := listOffsets(ctx, adm, cc.topic)
	if err != nil {
		return nil, err
	}
	var committed kadm.OffsetResponses
	if cc.group != "" {
		if committed, err = adm.FetchOffsets(ctx, cc.group); err != nil {
			return nil, fmt.Errorf("group %s: %w", cc.group, err)
		}
	}
	plan := &readPlan{pos: map[int32]int64{}, end: map[int32]int64{}}
	for p, e := range ends[cc.topic] {
		if cc.partition >= 0 && p != cc.partition {
			continue
		}
		s, _ := starts.Lookup(cc.topic, p)
		plan.end[p] = e.Offset
		plan.pos[p] = cc.start.position(s.Offset, e.Offset)
		if c, ok := committed.Lookup(cc.topic, p); ok && c.Err == nil && c.At >= 0 {
			plan.pos[p] = c.At
		}
	}
	if _, ok := plan.end[cc.partition]; cc.partition >= 0 && !ok {
		return nil, fmt.Errorf("topic %s has no partition %d", cc.topic, cc.partition)
	}
	return plan, nil
}

// listOffsets lists a topic's start and end offsets, retrying while some
// partition has no leader (as during a new topic's first election) until
// ctx ends.
func listOffsets(ctx context.Context, adm *kadm.Client, topic string) (starts, ends kadm.ListedOffsets, err error) {
	for {
		starts, err = adm.ListStartOffsets(ctx, topic)
		if err == nil {
			ends, err = adm.ListEndOffsets(ctx, topic)
		}
		if err == nil {
			err = firstErr(starts.Error(), ends.Error())
		}
		switch {
		case err == nil && len(ends[topic]) == 0, errors.Is(err, kerr.UnknownTopicOrPartition):
			return nil, nil, fmt.Errorf("topic %s does not exist", topic)
		case err == nil:
			return starts, ends, nil
		case !errors.Is(err, kerr.LeaderNotAvailable) && !errors.Is(err, kerr.NotLeaderForPartition):
			return nil, nil, err
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (p *readPlan) advance(partition int32, next int64) {
	if next > p.pos[partition] {
		p.pos[partition] = next
	}
}

func (p *readPlan) done() bool {
	for part, end := range p.end {
		if p.pos[part] < end {
			return false
		}
	}
	return true
}

// formatPart is a literal or a %-verb of a --format.
type formatPart struct {
	lit  string
	verb byte // 0 for a literal
}

const formatVerbs = "tpokvThKS"

func parseFormat(s string) ([]formatPart, error) {
	var parts []formatPart
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, formatPart{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+1 < len(s) && s[i+1] == '%':
			lit.WriteByte('%')
			i++
		case c == '%' && i+1 < len(s) && strings.IndexByte(formatVerbs, s[i+1]) >= 0:
			flush()
			parts = append(parts, formatPart{verb: s[i+1]})
			i++
		case c == '%':
			return nil, usagef("--format %q: %%%s is not a verb (%%t %%p %%o %%k %%v %%T %%h %%K %%S %%%%)", s, s[i+1:min(i+2, len(s))])
		case c == '\\' && i+1 < len(s) && strings.IndexByte(`nrt\`, s[i+1]) >= 0:
			lit.WriteByte(map[byte]byte{'n': '\n', 'r': '\r', 't': '\t', '\\': '\\'}[s[i+1]])
			i++
		default:
			lit.WriteByte(c)
		}
	}
	if !strings.HasSuffix(lit.String(), "\n") {
		lit.WriteByte('\n')
	}
	flush()
	return parts, nil
}

func writeRecord(w *bufio.Writer, parts []formatPart, r *kgo.Record) {
	for _, p := range parts {
		switch p.verb {
		case 0:
			w.WriteString(p.lit)
		case 't':
			w.WriteString(r.Topic)
		case 'p':
			w.WriteString(strconv.FormatInt(int64(r.Partition), 10))
		case 'o':
			w.WriteString(strconv.FormatInt(r.Offset, 10))
		case 'k':
			w.Write(r.Key)
		case 'v':
			w.Write(r.Value)
		case 'T':
			w.WriteString(strconv.FormatInt(r.Timestamp.UnixMilli(), 10))
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					w.WriteByte(',')
				}
				w.WriteString(h.Key)
				w.WriteByte('=')
				w.Write(h.Value)
			}
		case 'K':
			w.WriteString(strconv.Itoa(len(r.Key)))
		case 'S':
			w.WriteString(strconv.Itoa(len(r.Value)))
		}
	}
}
