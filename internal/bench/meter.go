package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// meter counts one side (produce acknowledgements or consumed messages) of a
// run. Callbacks from many goroutines update it; the progress printer reads
// it. Messages stamped before warmupEndNs count toward progress but not
// toward the result.
type meter struct {
	warmupEndNs   int64 // stamps before this are warmup
	windowStartNs int64 // rates are measured from here to lastNs
	noLatency     bool  // count only (consuming old data: its age is no latency)

	allMsgs, allBytes atomic.Int64 // every message, warmup included
	msgs, bytes       atomic.Int64 // after the warmup
	lastNs            atomic.Int64 // unix ns of the last message counted in msgs
	errors            atomic.Int64
	firstErrMu        sync.Mutex
	firstErr          string    // guarded by firstErrMu
	latencyNs         Histogram // now - stamp, after the warmup
}

func newMeter(warmupEnd, windowStart time.Time) *meter {
	return &meter{warmupEndNs: warmupEnd.UnixNano(), windowStartNs: windowStart.UnixNano()}
}

// observe counts one message sent at stampNs and seen (acknowledged or
// consumed) at nowNs.
func (m *meter) observe(stampNs, nowNs int64, size int) {
	m.allMsgs.Add(1)
	m.allBytes.Add(int64(size))
	if stampNs < m.warmupEndNs {
		return
	}
	m.msgs.Add(1)
	m.bytes.Add(int64(size))
	if !m.noLatency {
		m.latencyNs.Record(nowNs - stampNs)
	}
	for {
		last := m.lastNs.Load()
		if nowNs <= last || m.lastNs.CompareAndSwap(last, nowNs) {
			break
		}
	}
}

// fail counts one failed message (or one failed fetch) and keeps the first
// error's text.
func (m *meter) fail(err error) {
	m.errors.Add(1)
	m.firstErrMu.Lock()
	if m.firstErr == "" {
		m.firstErr = err.Error()
	}
	m.firstErrMu.Unlock()
}

// side is the meter's final figures; latency only when withLatency.
func (m *meter) side(withLatency bool) *Side {
	s := &Side{Messages: m.msgs.Load(), Bytes: m.bytes.Load(), Errors: m.errors.Load()}
	m.firstErrMu.Lock()
	s.FirstError = m.firstErr
	m.firstErrMu.Unlock()
	if elapsedNs := m.lastNs.Load() - m.windowStartNs; s.Messages > 0 && elapsedNs > 0 {
		s.ElapsedSec = float64(elapsedNs) / 1e9
		s.MsgsPerSec = float64(s.Messages) / s.ElapsedSec
		s.MBPerSec = float64(s.Bytes) / 1e6 / s.ElapsedSec
	}
	if withLatency {
		s.Latency = summarize(&m.latencyNs)
	}
	return s
}

// namedMeter is a meter and the word the progress line uses for it.
type namedMeter struct {
	name string
	m    *meter
}

// printProgress writes one line per interval until ctx ends: per side, the
// interval's rate and latency percentiles, then the error count.
func printProgress(ctx context.Context, w io.Writer, interval time.Duration, start time.Time, meters ...namedMeter) {
	if w == nil || interval <= 0 {
		return
	}
	type last struct {
		msgs, bytes int64
		hist        *Histogram
	}
	prev := make([]last, len(meters))
	for i := range meters {
		prev[i].hist = &Histogram{}
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	prevAt := start
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			secs := now.Sub(prevAt).Seconds()
			prevAt = now
			var b strings.Builder
			fmt.Fprintf(&b, "%6.1fs", now.Sub(start).Seconds())
			var errs int64
			for i, nm := range meters {
				msgs, bytes, hist := nm.m.allMsgs.Load(), nm.m.allBytes.Load(), nm.m.latencyNs.Snapshot()
				d := hist.Since(prev[i].hist)
				fmt.Fprintf(&b, "  %s %s msg/s %.1f MB/s", nm.name,
					FormatCount(float64(msgs-prev[i].msgs)/secs), float64(bytes-prev[i].bytes)/1e6/secs)
				if d.Count() > 0 {
					fmt.Fprintf(&b, " p50 %sms p99 %sms", FormatMs(float64(d.ValueAt(50))/1e6), FormatMs(float64(d.ValueAt(99))/1e6))
				}
				prev[i] = last{msgs, bytes, hist}
				errs += nm.m.errors.Load()
			}
			fmt.Fprintf(&b, "  errors %d\n", errs)
			io.WriteString(w, b.String())
		}
	}
}
