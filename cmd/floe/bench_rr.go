package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-broker/floe/internal/bench"
	"github.com/floe-broker/floe/reqreply"
)

// rrBench is one `floe bench rr` run: a responder and a requester in this
// process, measured at each concurrency level in turn.
type rrBench struct {
	opts        []kgo.Opt
	topic       string
	inbox       string
	group       string
	txnID       string
	size        int
	rf          int16
	warmup      time.Duration
	duration    time.Duration
	concurrency []int
}

// rrResult is one concurrency level's round trips.
type rrResult struct {
	concurrency int
	hist        *bench.Histogram
	errors      int64
	elapsed     time.Duration
}

func runRRBench(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("floe bench rr", flag.ContinueOnError)
	brokers := fs.String("brokers", "127.0.0.1:9092", "comma-separated seed brokers")
	commandConfig := fs.String("command-config", "", commandConfigUsage)
	topic := fs.String("topic", "floe-bench-rr", "request topic (created with one partition if missing)")
	inbox := fs.String("reply-topic", "floe-bench-rr-inbox", "reply topic (created with one partition if missing)")
	group := fs.String("group", "floe-bench-rr", "the responder's consumer group (its offsets are moved to the end first)")
	txnID := fs.String("transactional-id", "", "transactional responder under this id, read_committed requester (default: at least once)")
	size := fs.Int("size", 100, "request value size in bytes")
	rf := fs.Int("replication-factor", 1, "replication factor of created topics")
	warmup := fs.Duration("warmup", 2*time.Second, "per level: run this long first without counting it")
	duration := fs.Duration("duration", 10*time.Second, "per level: how long to measure")
	levels := fs.String("concurrency", "1,4,16", "comma-separated requests in flight (one run each)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	conc, err := parseLevels(*levels)
	if err != nil {
		return err
	}
	if *size < 0 || *size > 1<<20 || *duration <= 0 || *warmup < 0 || *rf < 1 || *rf > 16 {
		return usagef("--size (0..1 MiB), --duration (> 0), --warmup (>= 0) or --replication-factor (1..16) out of range")
	}
	security, err := commandConfigOpts(*commandConfig)
	if err != nil {
		return err
	}
	b := &rrBench{opts: append([]kgo.Opt{kgo.SeedBrokers(splitList(*brokers)...)}, security...),
		topic: *topic, inbox: *inbox, group: *group, txnID: *txnID, size: *size, rf: int16(*rf),
		warmup: *warmup, duration: *duration, concurrency: conc}
	res, err := b.run(ctx)
	if err != nil {
		return err
	}
	b.report(out, res)
	return nil
}

// parseLevels parses --concurrency.
func parseLevels(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 10000 {
			return nil, usagef("--concurrency %q: want numbers from 1 to 10000", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, usagef("--concurrency: no level given")
	}
	return out, nil
}

// run prepares the topics and group, starts the responder and requester
// and measures each level.
func (b *rrBench) run(ctx context.Context) ([]rrResult, error) {
	if err := b.prepare(ctx); err != nil {
		return nil, err
	}
	echo := func(_ context.Context, r *kgo.Record) ([]byte, error) { return r.Value, nil }
	var resp *reqreply.Responder
	var err error
	reqOpts := b.opts
	if b.txnID != "" {
		resp, err = reqreply.NewTransactionalResponder(b.topic, b.group, b.txnID, echo, b.opts...)
		reqOpts = append(reqOpts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	} else {
		resp, err = reqreply.NewResponder(b.topic, b.group, echo, b.opts...)
	}
	if err != nil {
		return nil, err
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- resp.Run(rctx) }()
	defer func() { stop(); <-done }()
	q, err := reqreply.NewRequester(ctx, b.inbox, 0, append(reqOpts, kgo.ProducerLinger(0))...)
	if err != nil {
		return nil, err
	}
	defer q.Close()
	// The first request waits for the responder to join its group.
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	_, err = q.Request(pctx, b.topic, nil, []byte("ready?"))
	cancel()
	if err != nil {
		return nil, fmt.Errorf("first request (the responder joining its group): %w", err)
	}
	var out []rrResult
	for _, c := range b.concurrency {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		out = append(out, b.level(ctx, q, c))
	}
	return out, nil
}

// prepare creates the topics if missing and moves the group's offsets to
// the request topic's end, so earlier runs' requests are not answered.
func (b *rrBench) prepare(ctx context.Context) error {
	cl, err := kgo.NewClient(b.opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, t := range []string{b.topic, b.inbox} {
		resp, err := adm.CreateTopic(ctx, 1, b.rf, nil, t)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", t, err)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, b.topic)
	if err != nil {
		return err
	}
	if err := ends.Error(); err != nil {
		return fmt.Errorf("end offsets of %s: %w", b.topic, err)
	}
	resps, err := adm.CommitOffsets(ctx, b.group, ends.Offsets())
	if err == nil {
		err = resps.Error()
	}
	return err
}

// level keeps c requests in flight for the warmup and the measured
// duration, recording the round trips of the measured part.
func (b *rrBench) level(ctx context.Context, q *reqreply.Requester, c int) rrResult {
	res := rrResult{concurrency: c, hist: &bench.Histogram{}}
	value := make([]byte, b.size)
	begin := time.Now()
	measureFrom := begin.Add(b.warmup)
	end := measureFrom.Add(b.duration)
	var errs atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < c; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(end) {
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				t0 := time.Now()
				_, err := q.Request(rctx, b.topic, nil, value)
				cancel()
				if t0.Before(measureFrom) {
					continue
				}
				if err != nil {
					errs.Add(1)
					continue
				}
				res.hist.Record(time.Since(t0).Nanoseconds())
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(measureFrom)
	res.errors = errs.Load()
	return res
}

// report prints one line per level.
func (b *rrBench) report(out io.Writer, res []rrResult) {
	mode := "at least once"
	if b.txnID != "" {
		mode = "transactional, read_committed"
	}
	ms := func(ns int64) string { return strconv.FormatFloat(float64(ns)/1e6, 'f', 2, 64) }
	fmt.Fprintf(out, "request/reply round trip: %s responder, %d-byte requests, %v per level after %v warmup\n",
		mode, b.size, b.duration, b.warmup)
	fmt.Fprintf(out, "%-11s %9s %9s %9s %9s %9s %9s %7s\n", "concurrency", "requests", "req/s", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "errors")
	for _, r := range res {
		h := r.hist
		fmt.Fprintf(out, "%-11d %9d %9.0f %9s %9s %9s %9s %7d\n", r.concurrency, h.Count(),
			float64(h.Count())/r.elapsed.Seconds(), ms(h.ValueAt(50)), ms(h.ValueAt(99)), ms(h.ValueAt(99.9)), ms(h.Max()), r.errors)
	}
}
