package world

import (
	"math"
	"time"

	"github.com/floe-broker/floe/netx"
)

// Clock drift: a node's monotonic clock may run at its own rate against
// simulated time, as a real machine's oscillator does (rate 1.01 gains 10
// ms a second). The node sees it everywhere it measures time: Monotonic
// reads rate times the simulated time elapsed, and a timer it sets for d
// fires after d/rate of simulated time, so its ticks, election timeouts and
// lease expiries all run at its rate. The wall clock is left to
// SkewClock/JumpClock (NTP keeps it near true time).
//
// Read leases assume a bound on drift (node/lease.go): no clock runs more
// than 1/LeaseMargin times as fast as another. The simulator draws rates
// within it; beyond it, a deposed leader may serve stale reads, which the
// negative test in package sim shows the checkers catch.

// drift is a host's clock rate and the point its reading is anchored at:
// the node's monotonic time is at + rate*(sim - simAt).
type drift struct {
	rate  float64 // 0 means 1
	simAt time.Duration
	at    time.Duration
}

// mono is the node's monotonic reading at simulated monotonic time now.
func (d *drift) mono(now time.Duration) time.Duration {
	if d.rate == 0 {
		return now
	}
	return d.at + time.Duration(float64(now-d.simAt)*d.rate)
}

// simDelay is how much simulated time a node's timer of d takes.
func (d *drift) simDelay(dur time.Duration) time.Duration {
	if d.rate == 0 || dur <= 0 {
		return dur
	}
	return time.Duration(math.Ceil(float64(dur) / d.rate))
}

// SetClockRate sets node id's monotonic clock rate from now on (1: true
// time; must be positive). Its reading stays continuous and never goes
// back. The rate outlives restarts: it belongs to the machine.
func (w *World) SetClockRate(id netx.NodeID, rate float64) {
	h := w.faultTarget("drift", id)
	if h == nil {
		return
	}
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		w.Tracef("fault drift n%d rate=%v: not a positive rate, ignored", id, rate)
		return
	}
	now := w.clock.Monotonic()
	h.drift = drift{rate: rate, simAt: now, at: h.drift.mono(now)}
	w.Tracef("fault drift n%d rate=%.4f", id, rate)
}

// ClockRate returns node id's monotonic clock rate (1 if never set).
func (w *World) ClockRate(id netx.NodeID) float64 {
	if h := w.host(id); h != nil && h.drift.rate != 0 {
		return h.drift.rate
	}
	return 1
}
