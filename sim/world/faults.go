package world

import (
	"fmt"
	"strings"
	"time"

	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
)

// Process and network faults. Each is written to the trace; a fault aimed at
// a node that does not exist, or that does not apply (crashing a node that is
// down), is traced as ignored and changes nothing.

// Crash kills node id like a power cut: the instance is dropped without
// Stop, everything it scheduled and everything in flight to it is lost, and
// its FS keeps a seeded prefix of what it had not synced, the last write
// possibly torn (logstore.CrashRandom).
func (w *World) Crash(id netx.NodeID) { w.CrashWith(id, logstore.CrashRandom) }

// CrashWith is Crash with a chosen disk outcome: logstore.CrashKeepAll is a
// process crash the OS survives, logstore.CrashLoseAll a power cut right
// after the last sync.
func (w *World) CrashWith(id netx.NodeID, mode logstore.CrashMode) {
	h := w.faultTarget("crash", id)
	if h == nil {
		return
	}
	if !h.up {
		w.Tracef("fault crash n%d: already down, ignored", id)
		return
	}
	w.Tracef("fault crash n%d.%d disk=%s", id, h.inc, crashModeName(mode))
	h.down()
	h.fs.CrashWith(mode)
}

// Stop shuts node id down cleanly: Instance.Stop runs, then the node is down
// as after a crash but its FS keeps everything (the OS flushes its cache).
func (w *World) Stop(id netx.NodeID) {
	h := w.faultTarget("stop", id)
	if h == nil {
		return
	}
	if !h.up {
		w.Tracef("fault stop n%d: already down, ignored", id)
		return
	}
	w.Tracef("fault stop n%d.%d", id, h.inc)
	if h.inst != nil {
		h.ran++
		h.inst.Stop()
	}
	h.down()
}

// ReplaceDisk crashes node id (if up), empties its disk as if it had been
// replaced by a new one, and boots it again under the same id: a broker
// whose disk was lost, restarted on an empty data directory.
func (w *World) ReplaceDisk(id netx.NodeID) {
	h := w.faultTarget("replace-disk", id)
	if h == nil {
		return
	}
	if h.up {
		w.CrashWith(id, logstore.CrashLoseAll)
	}
	w.Tracef("fault replace-disk n%d", id)
	h.fs.Wipe()
	h.boot()
}

// Restart boots a new incarnation of node id on the same FS and clock. A
// node that is up is crashed first (kill -9 and start again).
func (w *World) Restart(id netx.NodeID) {
	h := w.faultTarget("restart", id)
	if h == nil {
		return
	}
	if h.up {
		w.Crash(id)
	}
	w.Tracef("fault restart n%d", id)
	h.boot()
}

// Pause freezes node id like SIGSTOP: its timers and inbound messages are
// held, in order, until Resume. Messages already sent keep travelling.
func (w *World) Pause(id netx.NodeID) {
	h := w.faultTarget("pause", id)
	if h == nil {
		return
	}
	if !h.up || h.paused {
		w.Tracef("fault pause n%d: down or paused, ignored", id)
		return
	}
	w.Tracef("fault pause n%d.%d", id, h.inc)
	h.paused = true
}

// Resume unfreezes node id. What was held is replayed in its original
// order, as events at the current instant after those already due.
func (w *World) Resume(id netx.NodeID) {
	h := w.faultTarget("resume", id)
	if h == nil {
		return
	}
	if !h.paused {
		w.Tracef("fault resume n%d: not paused, ignored", id)
		return
	}
	w.Tracef("fault resume n%d.%d: replaying %d held events", id, h.inc, len(h.held))
	h.paused = false
	held := h.held
	h.held = nil
	for _, e := range held {
		w.clock.After(0, func() { h.run(e.inc, e.what+" (replayed)", e.fn) })
	}
}

// Partition splits the network into groups with no traffic between them;
// nodes named in no group form one more group (see netx.SimNetwork).
func (w *World) Partition(groups ...[]netx.NodeID) {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = fmt.Sprint(g)
	}
	w.Tracef("fault partition %s", strings.Join(parts, " | "))
	w.net.Partition(groups...)
}

// Isolate cuts node id off from every other node.
func (w *World) Isolate(id netx.NodeID) {
	w.Tracef("fault isolate n%d", id)
	w.net.Isolate(id)
}

// Cut stops traffic from one node to another (an asymmetric partition).
func (w *World) Cut(from, to netx.NodeID) {
	w.Tracef("fault cut n%d->n%d", from, to)
	w.net.Cut(from, to)
}

// Heal removes partitions, cuts, isolation and clogs. Loss, duplication and
// delay stay; set them with Net().SetDefaultFaults.
func (w *World) Heal() {
	w.Tracef("fault heal")
	w.net.Heal()
}

// SetFaults replaces the default link faults (for example, zero to end the
// fault phase of a run).
func (w *World) SetFaults(f netx.LinkFaults) {
	w.Tracef("fault link-defaults %+v", f)
	w.net.SetDefaultFaults(f)
}

// SkewClock sets node id's wall-clock offset from simulated time.
func (w *World) SkewClock(id netx.NodeID, offset time.Duration) {
	h := w.faultTarget("skew", id)
	if h == nil {
		return
	}
	w.Tracef("fault skew n%d %v", id, offset)
	h.clk.SetOffset(offset)
}

// faultTarget returns the host a fault is aimed at, tracing a bad id.
func (w *World) faultTarget(fault string, id netx.NodeID) *host {
	h := w.host(id)
	if h == nil {
		w.Tracef("fault %s n%d: no such node, ignored", fault, id)
	}
	return h
}

// crashModeName names a crash mode for the trace.
func crashModeName(m logstore.CrashMode) string {
	switch m {
	case logstore.CrashRandom:
		return "random"
	case logstore.CrashLoseAll:
		return "lose-all"
	case logstore.CrashKeepAll:
		return "keep-all"
	case logstore.CrashTornLast:
		return "torn-last"
	}
	return fmt.Sprintf("mode(%d)", m)
}

// JumpClock steps node id's wall clock by d from where it is (backwards when
// d < 0), as NTP or an operator would. Monotonic time is untouched.
func (w *World) JumpClock(id netx.NodeID, d time.Duration) {
	h := w.faultTarget("jump", id)
	if h == nil {
		return
	}
	w.Tracef("fault jump n%d %v", id, d)
	h.clk.Jump(d)
}
