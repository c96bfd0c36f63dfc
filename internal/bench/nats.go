package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSConfig is one `floe bench nats-produce` run: JetStream publishes with
// acknowledgements, asynchronous with a window of outstanding acks per
// publisher (the JetStream analogue of a Kafka producer's in-flight batches).
type NATSConfig struct {
	URL      string `json:"url"` // comma-separated server URLs
	Stream   string `json:"stream"`
	Subject  string `json:"subject"`
	Replicas int    `json:"replicas"`
	Storage  string `json:"storage"` // file or memory
	// Recreate deletes and recreates the stream, so every run starts empty.
	Recreate bool `json:"recreate"`

	MessageBytes int           `json:"message_bytes"`
	Count        int64         `json:"count"`
	Duration     time.Duration `json:"duration_ns"`
	Warmup       time.Duration `json:"warmup_ns"`
	Publishers   int           `json:"publishers"`
	RatePerSec   float64       `json:"rate_per_sec"`
	// Window is the most unacknowledged publishes per publisher.
	Window       int           `json:"window"`
	DrainTimeout time.Duration `json:"drain_timeout_ns"`
	Label        string        `json:"label,omitempty"`

	Progress         io.Writer     `json:"-"`
	ProgressInterval time.Duration `json:"-"`
}

// Validate reports the first setting that cannot run.
func (c *NATSConfig) Validate() error {
	switch {
	case strings.TrimSpace(c.URL) == "":
		return errors.New("no server URL")
	case c.Stream == "" || strings.ContainsAny(c.Stream, " .*>\t\r\n"):
		return fmt.Errorf("stream name %q: want a non-empty name without spaces, dots or wildcards", c.Stream)
	case c.Subject == "" || strings.ContainsAny(c.Subject, " *>\t\r\n"):
		return fmt.Errorf("subject %q: want a literal subject", c.Subject)
	case c.Replicas < 1 || c.Replicas > 5:
		return fmt.Errorf("replicas %d: want 1..5", c.Replicas)
	case c.Storage != "file" && c.Storage != "memory":
		return fmt.Errorf("storage %q: want file or memory", c.Storage)
	case c.MessageBytes < 0 || c.MessageBytes > messageBytesMax:
		return fmt.Errorf("message size %d: want 0..%d", c.MessageBytes, messageBytesMax)
	case c.Count < 0 || c.Duration < 0 || c.Warmup < 0 || c.DrainTimeout < 0:
		return errors.New("count and durations must not be negative")
	case c.Count == 0 && c.Duration == 0:
		return errors.New("need a count or a duration")
	case c.Publishers < 1:
		return fmt.Errorf("publishers %d: want at least one", c.Publishers)
	case c.RatePerSec < 0 || math.IsNaN(c.RatePerSec) || math.IsInf(c.RatePerSec, 0):
		return fmt.Errorf("rate %v: want >= 0 msg/s", c.RatePerSec)
	case c.Window < 1:
		return fmt.Errorf("window %d: want at least 1", c.Window)
	}
	return nil
}

// RunNATS publishes to a JetStream stream and measures acknowledged
// throughput and ack latency.
func RunNATS(ctx context.Context, cfg NATSConfig) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := setupStream(ctx, &cfg); err != nil {
		return nil, err
	}
	res := &Result{Tool: "nats", Mode: ModeProduce, Label: cfg.Label, OfferedPerSec: cfg.RatePerSec, MessageBytes: cfg.MessageBytes, NATS: &cfg}
	start := time.Now()
	warmupEnd := start.Add(cfg.Warmup)
	acks := newMeter(warmupEnd, warmupEnd)
	run := &natsRun{cfg: &cfg, acks: acks, start: start}
	run.values.New = func() any { return newPayload(cfg.MessageBytes) }
	pubs := make([]*natsPublisher, cfg.Publishers)
	for i := range pubs {
		p, err := run.newPublisher(i)
		if err != nil {
			for _, q := range pubs[:i] {
				q.nc.Close()
			}
			return nil, err
		}
		pubs[i] = p
	}
	progressCtx, stopProgress := context.WithCancel(ctx)
	defer stopProgress()
	go printProgress(progressCtx, cfg.Progress, cfg.ProgressInterval, start, namedMeter{"publish", acks})
	var wg sync.WaitGroup
	for _, p := range pubs {
		wg.Go(func() { p.loop(ctx) })
	}
	wg.Wait()
	run.drain(ctx, pubs)
	stopProgress()
	for _, p := range pubs {
		p.nc.Close()
	}
	res.Produce = acks.side(true)
	return res, ctx.Err()
}

// setupStream (re)creates the benchmark stream.
func setupStream(ctx context.Context, cfg *NATSConfig) error {
	nc, err := nats.Connect(cfg.URL, nats.Name("floe-bench-admin"))
	if err != nil {
		return fmt.Errorf("connect %s: %w", cfg.URL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	storage := jetstream.FileStorage
	if cfg.Storage == "memory" {
		storage = jetstream.MemoryStorage
	}
	// A cluster that just started may not have elected its JetStream meta
	// leader yet: retry for a while before giving up.
	deadline := time.Now().Add(streamReadyTimeout)
	for {
		err = recreateStream(ctx, js, cfg, storage)
		var apiErr *jetstream.APIError
		permanent := errors.As(err, &apiErr) && apiErr.Code == 400 // a bad request stays bad
		if err == nil || permanent || ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("create stream %s (R%d, %s): %w", cfg.Stream, cfg.Replicas, cfg.Storage, err)
	}
	return nil
}

func recreateStream(ctx context.Context, js jetstream.JetStream, cfg *NATSConfig, storage jetstream.StorageType) error {
	if cfg.Recreate {
		if err := js.DeleteStream(ctx, cfg.Stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("delete: %w", err)
		}
	}
	_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: cfg.Stream, Subjects: []string{cfg.Subject}, Storage: storage, Replicas: cfg.Replicas,
	})
	return err
}

// streamReadyTimeout bounds waiting for a (new) cluster to accept the stream.
const streamReadyTimeout = 30 * time.Second

type natsRun struct {
	cfg     *NATSConfig
	acks    *meter
	start   time.Time
	values  sync.Pool // []byte payloads, returned once acked or failed
	claimed atomic.Int64
	sent    atomic.Int64
}

func (r *natsRun) claim() bool {
	return r.cfg.Count == 0 || r.claimed.Add(1) <= r.cfg.Count
}

type natsPublisher struct {
	run *natsRun
	id  int
	nc  *nats.Conn
	js  jetstream.JetStream
}

func (r *natsRun) newPublisher(id int) (*natsPublisher, error) {
	nc, err := nats.Connect(r.cfg.URL, nats.Name(fmt.Sprintf("floe-bench-%d", id)))
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", r.cfg.URL, err)
	}
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(r.cfg.Window),
		jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) {
			r.acks.observe(natsStamp(m), time.Now().UnixNano(), len(m.Data))
			r.values.Put(m.Data)
		}),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			r.acks.fail(err)
			r.values.Put(m.Data)
		}))
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &natsPublisher{run: r, id: id, nc: nc, js: js}, nil
}

// loop publishes until the count or duration is spent, closed loop (the
// window full blocks) or open loop on a pacer.
func (p *natsPublisher) loop(ctx context.Context) {
	cfg := p.run.cfg
	var deadline time.Time
	if cfg.Duration > 0 {
		deadline = p.run.start.Add(cfg.Warmup + cfg.Duration)
	}
	over := func(at time.Time) bool { return !deadline.IsZero() && !at.Before(deadline) }
	if cfg.RatePerSec == 0 {
		for ctx.Err() == nil {
			now := time.Now()
			if over(now) || !p.run.claim() || !p.publish(ctx, now) {
				return
			}
		}
		return
	}
	perPublisher := cfg.RatePerSec / float64(cfg.Publishers)
	offset := time.Duration(float64(p.id) * 1e9 / perPublisher / float64(cfg.Publishers))
	pc := newPacer(p.run.start.Add(offset), perPublisher, pacerBurstMax)
	for ctx.Err() == nil {
		now := time.Now()
		n := pc.due(now)
		if n == 0 {
			time.Sleep(min(pc.wait(now), 10*time.Millisecond))
			continue
		}
		for range n {
			at := pc.next()
			if over(at) || !p.run.claim() || !p.publish(ctx, at) {
				return
			}
		}
	}
}

// publish sends one message stamped at, retrying while the window is
// stalled; false when ctx ended first.
func (p *natsPublisher) publish(ctx context.Context, at time.Time) bool {
	m := &nats.Msg{Subject: p.run.cfg.Subject, Data: p.run.values.Get().([]byte)}
	if !putStamp(m.Data, at.UnixNano()) {
		m.Header = nats.Header{stampHeader: []string{strconv.FormatInt(at.UnixNano(), 10)}}
	}
	for {
		_, err := p.js.PublishMsgAsync(m, jetstream.WithStallWait(time.Second))
		switch {
		case err == nil:
			p.run.sent.Add(1)
			return true
		case errors.Is(err, jetstream.ErrTooManyStalledMsgs) && ctx.Err() == nil:
			continue
		case ctx.Err() != nil:
			return false
		default:
			p.run.sent.Add(1)
			p.run.acks.fail(err)
			return true
		}
	}
}

// drain waits up to DrainTimeout for every publisher's outstanding acks;
// those still missing count as errors.
func (r *natsRun) drain(ctx context.Context, pubs []*natsPublisher) {
	drainCtx, cancel := context.WithTimeout(ctx, r.cfg.DrainTimeout)
	defer cancel()
	for _, p := range pubs {
		select {
		case <-p.js.PublishAsyncComplete():
		case <-drainCtx.Done():
		}
	}
	if missing := r.sent.Load() - r.acks.allMsgs.Load() - r.acks.errors.Load(); missing > 0 {
		r.acks.errors.Add(missing - 1)
		r.acks.fail(fmt.Errorf("%d publishes without an ack after the %v drain timeout", missing, r.cfg.DrainTimeout))
	}
}

// natsStamp reads the send time from a message's value or header.
func natsStamp(m *nats.Msg) int64 {
	if ns, ok := stampOf(m.Data, nil); ok {
		return ns
	}
	ns, _ := strconv.ParseInt(m.Header.Get(stampHeader), 10, 64)
	return ns
}
