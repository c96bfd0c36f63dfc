package world

import (
	"fmt"
	"time"

	"github.com/floe-broker/floe/clock"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
)

// host is one simulated machine: its disk and clock outlive the instances
// (incarnations) that run on it.
type host struct {
	w   *World
	id  netx.NodeID
	fs  *logstore.SimFS
	clk *clock.SkewClock
	// drift is the machine's monotonic clock rate (clockdrift.go).
	drift drift

	// inc counts boots; the running instance is incarnation inc. An event
	// belongs to the incarnation that scheduled it and runs only while
	// that incarnation is up.
	inc uint64
	// Invariant: up == (inst != nil) unless the Factory returned nil.
	up   bool
	inst Instance
	// Invariant: held is empty unless paused. It holds, in arrival order,
	// the events that came due while paused.
	paused bool
	held   []heldEvent
	// ran counts the times instance code ran on the host: boots and
	// events (World.Ran).
	ran uint64
}

// heldEvent is an event that came due while its node was paused.
type heldEvent struct {
	inc  uint64
	what string
	fn   func()
}

// boot starts a new incarnation on the host's disk and clock.
func (h *host) boot() {
	h.inc++
	h.up = true
	inc := h.inc
	tracePrefix := fmt.Appendf(nil, "n%d.%d | ", h.id, inc)
	env := Env{
		ID:    h.id,
		Clock: nodeClock{h},
		Sched: nodeSched{h, inc},
		Net: h.w.net.Endpoint(h.id, func(from netx.NodeID, msg []byte) {
			h.deliver(inc, from, msg)
		}),
		FS:   h.fs,
		Rand: h.w.childRand(),
		Tracef: func(format string, args ...any) {
			h.w.trace.addf(h.w.clock.Monotonic(), tracePrefix, format, args...)
		},
		Fatal: func(err error) { h.fatal(inc, err) },
	}
	if h.w.cfg.Buggify {
		env.Buggify = h.w.childRand()
	}
	h.w.trace.add(h.w.clock.Monotonic(), "n%d.%d boot", h.id, inc)
	h.ran++
	h.inst = h.w.factory(env)
}

// fatal ends incarnation inc after the current event, as a process exit
// would (see Env.Fatal).
func (h *host) fatal(inc uint64, err error) {
	w := h.w
	ev := FatalEvent{ID: h.id, Inc: inc, At: w.clock.Monotonic(), Err: err}
	w.fatals = append(w.fatals, ev)
	w.trace.add(w.clock.Monotonic(), "n%d.%d fatal: %v", h.id, inc, err)
	w.clock.After(0, func() {
		if !h.up || h.inc != inc {
			return
		}
		w.Tracef("fatal exit n%d.%d", h.id, inc)
		h.down()
		h.fs.CrashWith(logstore.CrashRandom)
		if w.onFatalExit != nil {
			w.onFatalExit(ev)
		}
	})
}

// deliver hands a message to incarnation inc, through the pause gate.
func (h *host) deliver(inc uint64, from netx.NodeID, msg []byte) {
	h.w.deliveredBytes += int64(len(msg))
	what := recvWhat(uint64(from), len(msg), fnv32a(msg))
	h.run(inc, what, func() {
		if h.inst != nil {
			h.inst.Handle(from, msg)
		}
	})
}

// run runs an event of incarnation inc: not at all if that incarnation is
// gone, later if the node is paused, now otherwise.
func (h *host) run(inc uint64, what string, fn func()) {
	now := h.w.clock.Monotonic()
	switch {
	case !h.up || h.inc != inc:
		h.w.trace.addNode(now, uint64(h.id), inc, what, ": gone")
	case h.paused:
		h.w.trace.addNode(now, uint64(h.id), inc, what, ": held")
		h.held = append(h.held, heldEvent{inc, what, fn})
	default:
		h.w.trace.addNode(now, uint64(h.id), inc, what, "")
		h.ran++
		fn()
	}
}

// down ends the current incarnation: its events become no-ops and its
// network endpoint is detached.
func (h *host) down() {
	h.up = false
	h.inst = nil
	h.paused = false
	h.held = nil
	h.w.net.Detach(h.id)
}

// nodeSched is an incarnation's Scheduler: its callbacks go through the
// host's incarnation check and pause gate.
type nodeSched struct {
	h   *host
	inc uint64
}

func (s nodeSched) After(d time.Duration, fn func()) {
	if fn == nil {
		return
	}
	s.h.w.clock.After(s.h.drift.simDelay(d), func() { s.h.run(s.inc, "timer", fn) })
}

// nodeClock exposes only the Clock of the host's SkewClock, so node code
// cannot schedule around the incarnation check through it; its monotonic
// reading runs at the host's drift rate (clockdrift.go).
type nodeClock struct{ h *host }

func (c nodeClock) Now() time.Time { return c.h.clk.Now() }
func (c nodeClock) Monotonic() time.Duration {
	return c.h.drift.mono(c.h.clk.Monotonic())
}
