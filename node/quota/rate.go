// Package quota is the arithmetic of Kafka's client quotas (KIP-13,
// KIP-219): a windowed rate as Kafka's metrics library measures it
// (org.apache.kafka.common.metrics.stats.Rate over a SampledStat), and the
// throttle time a client gets for exceeding a bound.
//
// It reads no clock: every call takes the time, so the runtime passes the
// wall clock and tests pass whatever they like. It is core code (pure),
// and not safe for concurrent use; callers lock.
package quota

import (
	"math"
	"time"
)

// Defaults, as Kafka's quota.window.num and quota.window.size.seconds.
const (
	DefaultSamples = 11
	DefaultWindow  = time.Second
)

// Config is how a Rate is sampled. The zero value means the defaults.
type Config struct {
	Samples int           // how many windows are kept (quota.window.num)
	Window  time.Duration // one window's length (quota.window.size.seconds)
}

func (c Config) withDefaults() Config {
	if c.Samples <= 0 {
		c.Samples = DefaultSamples
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	return c
}

// MaxThrottle is the longest throttle handed out: what a response's
// throttle_time_ms (an int32 of milliseconds) can say.
const MaxThrottle = time.Duration(math.MaxInt32) * time.Millisecond

// sample is one window: the sum recorded in it and when it began.
type sample struct {
	value float64
	start int64 // unix nanoseconds
}

// Rate is a sum per second over the last Samples windows, Kafka's way:
// samples advance lazily (a record after a window's end starts the next
// sample at the record's time), samples older than Samples windows are
// reset when measured, and the elapsed time the sum is divided by is at
// least Samples-1 whole windows, so a burst at the start is not measured
// against a few milliseconds.
//
// Invariant: len(samples) <= cfg.Samples; current indexes the newest.
type Rate struct {
	cfg     Config
	samples []sample
	current int
}

// NewRate returns an empty rate.
func NewRate(cfg Config) *Rate {
	return &Rate{cfg: cfg.withDefaults()}
}

func nanos(t time.Time) int64 { return t.UnixNano() }

func (r *Rate) cur(now int64) *sample {
	if len(r.samples) == 0 {
		r.samples = append(r.samples, sample{start: now})
	}
	return &r.samples[r.current]
}

// Record adds v at now.
func (r *Rate) Record(v float64, now time.Time) {
	n := nanos(now)
	s := r.cur(n)
	if n-s.start >= int64(r.cfg.Window) {
		r.current = (r.current + 1) % r.cfg.Samples
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, sample{start: n})
		} else {
			r.samples[r.current] = sample{start: n}
		}
		s = &r.samples[r.current]
	}
	s.value += v
}

// purge resets the samples that began Samples windows or more before now.
func (r *Rate) purge(n int64) {
	expire := int64(r.cfg.Samples) * int64(r.cfg.Window)
	for i := range r.samples {
		if n-r.samples[i].start >= expire {
			r.samples[i] = sample{start: n}
		}
	}
}

// WindowSize is the span the sum is divided by at now: from the oldest
// live sample's start, but never less than Samples-1 whole windows (plus
// the part of the current one), nor less than a millisecond.
func (r *Rate) WindowSize(now time.Time) time.Duration {
	n := nanos(now)
	r.purge(n)
	oldest := n
	if len(r.samples) > 0 {
		oldest = r.samples[0].start
		for _, s := range r.samples[1:] {
			if s.start < oldest {
				oldest = s.start
			}
		}
	}
	elapsed := n - oldest
	full := elapsed / int64(r.cfg.Window)
	if minFull := int64(r.cfg.Samples - 1); full < minFull {
		elapsed += (minFull - full) * int64(r.cfg.Window)
	}
	return time.Duration(max(elapsed, int64(time.Millisecond)))
}

// Measure returns the rate per second at now.
func (r *Rate) Measure(now time.Time) float64 {
	n := nanos(now)
	r.purge(n)
	sum := 0.0
	for _, s := range r.samples {
		sum += s.value
	}
	return sum / r.WindowSize(now).Seconds()
}

// Throttle is how long a client whose rate is measured at now must wait
// for it to fall to bound (per second): Kafka's
// (rate - bound) / bound * windowSize, rounded to the millisecond (Kafka
// does not cap it for byte rates; MaxThrottle only keeps it in the
// response field's range); 0 when the rate is within bound or bound is not
// positive (no quota).
func (r *Rate) Throttle(bound float64, now time.Time) time.Duration {
	if !(bound > 0) {
		return 0
	}
	rate := r.Measure(now)
	if rate <= bound {
		return 0
	}
	ms := math.Round((rate - bound) / bound * float64(r.WindowSize(now)) / float64(time.Millisecond))
	if ms >= float64(math.MaxInt32) {
		return MaxThrottle
	}
	return time.Duration(ms) * time.Millisecond
}

// RecordAndThrottle records v at now and returns the throttle against
// bound, as Kafka's sensor does (record first, then check).
func (r *Rate) RecordAndThrottle(v, bound float64, now time.Time) time.Duration {
	r.Record(v, now)
	return r.Throttle(bound, now)
}

// Unrecord takes v back out of the current sample (Kafka unrecords a
// throttled fetch whose data it does not send).
func (r *Rate) Unrecord(v float64, now time.Time) {
	r.Record(-v, now)
}

// Idle reports whether the rate has nothing left to remember at now: every
// sample expired. A caller keeping many rates drops idle ones.
func (r *Rate) Idle(now time.Time) bool {
	n := nanos(now)
	expire := int64(r.cfg.Samples) * int64(r.cfg.Window)
	for _, s := range r.samples {
		if n-s.start < expire && s.value != 0 {
			return false
		}
	}
	return true
}
