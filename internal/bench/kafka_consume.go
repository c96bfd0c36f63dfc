package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// consumerGroup is the set of consumer clients of one run (direct partition
// assignment, no consumer group protocol: the bench measures the data path,
// and works against brokers without group support).
type consumerGroup struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	m      *meter
	count  int64 // stop all after this many messages; 0: no limit

	errMu sync.Mutex
	err   error // first client error; guarded by errMu
}

// startConsumers starts one client per share of the partitions, reading
// from the offsets in from. With until, a consumer stops once it has read
// every partition up to its offset there; without, it runs until drain.
func (r *kafkaRun) startConsumers(ctx context.Context, from, until map[int32]int64, m *meter, count int64) (*consumerGroup, error) {
	gctx, cancel := context.WithCancel(ctx)
	g := &consumerGroup{ctx: gctx, cancel: cancel, m: m, count: count}
	var parts []int32
	for p := range from {
		parts = append(parts, p)
	}
	for _, share := range assign(parts, r.cfg.Consumers) {
		mine := make(map[int32]int64, len(share))
		var stopAt map[int32]int64
		if until != nil {
			stopAt = make(map[int32]int64, len(share))
		}
		for _, p := range share {
			mine[p] = from[p]
			if until != nil {
				stopAt[p] = until[p]
			}
		}
		cl, err := kgo.NewClient(r.cfg.consumerOpts(mine)...)
		if err != nil {
			cancel()
			g.wg.Wait()
			return nil, err
		}
		g.wg.Go(func() {
			defer cl.Close()
			g.consume(cl, stopAt)
		})
	}
	return g, nil
}

// consume polls until ctx ends, the count is reached, or (with stopAt)
// every partition has been read up to its offset there.
func (g *consumerGroup) consume(cl *kgo.Client, stopAt map[int32]int64) {
	for {
		fetches := cl.PollFetches(g.ctx)
		if g.ctx.Err() != nil {
			return
		}
		if errors.Is(fetches.Err0(), kgo.ErrClientClosed) {
			g.setErr(kgo.ErrClientClosed)
			return
		}
		nowNs := time.Now().UnixNano()
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				g.m.fail(fmt.Errorf("fetch %s/%d: %w", t, p, err))
			}
		})
		fetches.EachRecord(func(rec *kgo.Record) {
			stamp, ok := recordStamp(rec)
			if !ok {
				stamp = nowNs // not ours: counted, with no latency to speak of
			}
			g.m.observe(stamp, nowNs, len(rec.Value))
			if end, ok := stopAt[rec.Partition]; ok && rec.Offset+1 >= end {
				delete(stopAt, rec.Partition)
			}
		})
		if stopAt != nil && len(stopAt) == 0 {
			return
		}
		if g.count > 0 && g.m.allMsgs.Load() >= g.count {
			g.cancel()
			return
		}
	}
}

func (g *consumerGroup) setErr(err error) {
	g.errMu.Lock()
	defer g.errMu.Unlock()
	if g.err == nil {
		g.err = err
	}
}

// drain waits until the consumers have seen target messages or timeout has
// passed, then stops them.
func (g *consumerGroup) drain(target int64, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for g.m.allMsgs.Load() < target && time.Now().Before(deadline) && g.ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	g.cancel()
}

// wait waits for every consumer to stop and returns the first client error.
func (g *consumerGroup) wait() error {
	g.wg.Wait()
	g.cancel()
	g.errMu.Lock()
	defer g.errMu.Unlock()
	return g.err
}

// consumeExisting reads what the topic holds when the run starts (or Count
// messages of it): consume throughput, no latency (the messages are old).
func (r *kafkaRun) consumeExisting(ctx context.Context) (*Side, error) {
	from, err := r.offsets(ctx, r.adm.ListStartOffsets)
	if err != nil {
		return nil, err
	}
	until, err := r.offsets(ctx, r.adm.ListEndOffsets)
	if err != nil {
		return nil, err
	}
	for p := range from {
		if from[p] >= until[p] {
			delete(from, p)
			delete(until, p)
		}
	}
	start := time.Now()
	m := newMeter(start, start)
	m.warmupEndNs = math.MinInt64 // every message counts, however old its stamp
	m.noLatency = true
	if len(from) == 0 {
		return m.side(false), nil
	}
	if r.cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.cfg.Duration)
		defer cancel()
	}
	progressCtx, stopProgress := context.WithCancel(ctx)
	defer stopProgress()
	go printProgress(progressCtx, r.cfg.Progress, r.cfg.ProgressInterval, start, namedMeter{"consume", m})
	g, err := r.startConsumers(ctx, from, until, m, r.cfg.Count)
	if err != nil {
		return nil, err
	}
	if err := g.wait(); err != nil {
		return nil, err
	}
	return m.side(false), nil
}
