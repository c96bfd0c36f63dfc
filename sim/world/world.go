package world

import (
	"math/rand"
	"slices"
	"time"

	"github.com/floe-broker/floe/clock"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
)

// Config describes a simulated world.
type Config struct {
	// Seed determines the whole run: the network's choices, each file
	// system's crash outcomes and every node's *rand.Rand derive from it.
	Seed int64
	// Nodes is the number of nodes; their ids are 1..Nodes.
	Nodes int
	// Start is the simulated wall time at monotonic zero. The zero value
	// means DefaultStart.
	Start time.Time
	// Faults are the default faults of every network link.
	Faults netx.LinkFaults
	// Buggify gives every node incarnation a seeded Env.Buggify, so fault
	// sites inside product code may fire.
	Buggify bool
	// TraceKeep bounds the trace lines kept in memory to the last
	// TraceKeep (0: keep all). TraceHash always covers every line.
	TraceKeep int
}

// DefaultStart is the simulated wall time a Config without Start begins at.
// It is fixed, not the real time, so runs replay.
var DefaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Env is everything a node instance may touch. It is the simulated
// counterpart of what the production runtime hands a node.
type Env struct {
	ID netx.NodeID
	// Clock is this node's view of time; its wall clock may be skewed
	// (World.NodeClock).
	Clock clock.Clock
	// Sched runs callbacks on the simulator's loop. Callbacks scheduled by
	// an incarnation that has since crashed or stopped never run.
	Sched clock.Scheduler
	// Net sends to peers. Inbound messages arrive through Instance.Handle.
	Net netx.Transport
	// FS is this node's disk. It outlives incarnations: a restart sees
	// what the previous one synced.
	FS logstore.FS
	// Rand is this incarnation's generator, seeded from the world's.
	Rand *rand.Rand
	// Tracef adds a line to the world's trace, tagged with the node and
	// incarnation.
	Tracef func(format string, args ...any)
	// Fatal ends this incarnation as a process exit would, once the
	// current event is over: the node goes down and its FS loses a seeded
	// part of what it had not synced (the OS may have dropped dirty pages
	// after a failed fsync). The world records it (World.Fatals).
	Fatal func(err error)
	// Buggify is nil unless Config.Buggify: then it is this incarnation's
	// generator for fault sites inside product code.
	Buggify *rand.Rand
}

// Instance is one incarnation of a node.
type Instance interface {
	// Handle receives one inbound message; the instance owns msg.
	Handle(from netx.NodeID, msg []byte)
	// Stop shuts the instance down cleanly (World.Stop). A crash does not
	// call it.
	Stop()
}

// Factory makes a node instance. The World calls it at boot and at every
// restart, with a fresh Env on the same FS. It may schedule its first
// timers through env.Sched.
type Factory func(env Env) Instance

// World is a simulated cluster. It is not safe for concurrent use: drive it
// from one goroutine (a test's).
type World struct {
	cfg     Config
	rng     *rand.Rand
	clock   *clock.Sim
	net     *netx.SimNetwork
	factory Factory
	// hosts[i] is node id i+1.
	hosts  []*host
	trace  tracer
	fatals []FatalEvent
	// onFatalExit, if set, runs after a fatal exit has taken its node
	// down (SetOnFatalExit).
	onFatalExit func(FatalEvent)
	// deliveredBytes counts the bytes of every message delivered (or held
	// for a paused node).
	deliveredBytes int64
}

// FatalEvent is one call of Env.Fatal.
type FatalEvent struct {
	ID  netx.NodeID
	Inc uint64
	At  time.Duration
	Err error
}

// New builds a world and boots every node, in id order.
//
// Every generator derives from cfg.Seed in a fixed order (the network's,
// then each node's FS in id order, then each boot's), so the same Config
// and the same calls on the World replay the same run.
func New(cfg Config, f Factory) *World {
	if cfg.Start.IsZero() {
		cfg.Start = DefaultStart
	}
	w := &World{
		cfg:     cfg,
		rng:     rand.New(rand.NewSource(cfg.Seed)),
		clock:   clock.NewSim(cfg.Start),
		factory: f,
		trace:   newTracer(cfg.TraceKeep),
	}
	w.clock.SetHook(func(at time.Duration, seq uint64) {
		w.trace.addEv(at, seq)
	})
	w.net = netx.NewSimNetwork(w.clock, w.childRand())
	w.net.SetDefaultFaults(cfg.Faults)
	for i := range max(cfg.Nodes, 0) {
		w.hosts = append(w.hosts, &host{
			w:   w,
			id:  netx.NodeID(i + 1),
			fs:  logstore.NewSimFS(w.childRand()),
			clk: w.clock.NodeClock(),
		})
	}
	w.Tracef("world seed=%d nodes=%d faults=%+v buggify=%v", cfg.Seed, len(w.hosts), cfg.Faults, cfg.Buggify)
	for _, h := range w.hosts {
		h.boot()
	}
	return w
}

// AddNode adds a node with the next id and a new disk, boots it, and
// returns its id: a machine joining a running cluster.
func (w *World) AddNode() netx.NodeID {
	h := &host{
		w:   w,
		id:  netx.NodeID(len(w.hosts) + 1),
		fs:  logstore.NewSimFS(w.childRand()),
		clk: w.clock.NodeClock(),
	}
	w.hosts = append(w.hosts, h)
	w.Tracef("add n%d", h.id)
	h.boot()
	return h.id
}

// childRand returns a new generator seeded from the world's.
func (w *World) childRand() *rand.Rand {
	return rand.New(rand.NewSource(w.rng.Int63()))
}

// Rand returns the world's generator. Tests draw their own choices (which
// node to crash, when) from it so they too follow the seed.
func (w *World) Rand() *rand.Rand { return w.rng }

// Seed returns the seed the world was made with.
func (w *World) Seed() int64 { return w.cfg.Seed }

// Clock returns the simulated clock and event heap.
func (w *World) Clock() *clock.Sim { return w.clock }

// Net returns the simulated network. Faults set on it directly (link
// faults, clogs) are not traced; Partition, Isolate, Cut and Heal on the
// World are.
func (w *World) Net() *netx.SimNetwork { return w.net }

// IDs returns the node ids, in order.
func (w *World) IDs() []netx.NodeID {
	ids := make([]netx.NodeID, len(w.hosts))
	for i, h := range w.hosts {
		ids[i] = h.id
	}
	return ids
}

// host returns the node with id, or nil.
func (w *World) host(id netx.NodeID) *host {
	if id < 1 || int(id) > len(w.hosts) {
		return nil
	}
	return w.hosts[id-1]
}

// FS returns node id's file system, or nil if there is no such node.
func (w *World) FS(id netx.NodeID) *logstore.SimFS {
	if h := w.host(id); h != nil {
		return h.fs
	}
	return nil
}

// NodeClock returns node id's clock (to skew or jump its wall time), or nil
// if there is no such node.
func (w *World) NodeClock(id netx.NodeID) *clock.SkewClock {
	if h := w.host(id); h != nil {
		return h.clk
	}
	return nil
}

// Up reports whether node id is running (a paused node is up).
func (w *World) Up(id netx.NodeID) bool {
	h := w.host(id)
	return h != nil && h.up
}

// Paused reports whether node id is paused.
func (w *World) Paused(id netx.NodeID) bool {
	h := w.host(id)
	return h != nil && h.paused
}

// Incarnation returns how many times node id has booted (0 if never or if
// there is no such node).
func (w *World) Incarnation(id netx.NodeID) uint64 {
	if h := w.host(id); h != nil {
		return h.inc
	}
	return 0
}

// Ran counts the times the World ran code of node id's instances: boots,
// stops, and every event, delivery and Call that reached a running
// instance. Instance code runs only there (an Instance has no goroutines
// or timers of its own), so while Ran stays the same the instance's memory
// stays as it was, unless the caller itself changed it through Instance;
// what the instance computes from its clock may still change.
func (w *World) Ran(id netx.NodeID) uint64 {
	if h := w.host(id); h != nil {
		return h.ran
	}
	return 0
}

// Instance returns node id's current instance, or nil while it is down.
func (w *World) Instance(id netx.NodeID) Instance {
	if h := w.host(id); h != nil {
		return h.inst
	}
	return nil
}

// DeliveredBytes returns the bytes of every message the network has
// handed to a node so far.
func (w *World) DeliveredBytes() int64 { return w.deliveredBytes }

// SetOnFatalExit sets fn to run, in the exit's event, each time a node
// goes down of a fatal error (Env.Fatal), with that error; nil clears it.
// The simulator's heal uses it to restart a node that exits, after the
// heal, of a fault injected before it (sim/nemesis.go stop).
func (w *World) SetOnFatalExit(fn func(FatalEvent)) { w.onFatalExit = fn }

// Fatals returns every Env.Fatal call so far, in order.
func (w *World) Fatals() []FatalEvent { return slices.Clone(w.fatals) }

// After runs fn at d from now as a world-level event (a client's or a test
// driver's): no node's incarnation or pause gate applies to it.
func (w *World) After(d time.Duration, fn func()) { w.clock.After(d, fn) }

// Call delivers a client request to node id: after delay, fn runs on the
// incarnation that was up when Call was made, through its pause gate (a
// paused node holds it until Resume), with the instance as argument. If that
// incarnation is gone by then (or the node was down), gone runs instead, as
// a refused or reset connection would tell a client. Either may be nil.
func (w *World) Call(id netx.NodeID, delay time.Duration, what string, fn func(Instance), gone func()) {
	h := w.host(id)
	if h == nil || !h.up {
		w.clock.After(delay, func() {
			w.trace.add(w.clock.Monotonic(), "n%d %s: down", id, what)
			if gone != nil {
				gone()
			}
		})
		return
	}
	inc := h.inc
	w.clock.After(delay, func() {
		if !h.up || h.inc != inc {
			w.trace.addNode(w.clock.Monotonic(), uint64(id), inc, what, ": gone")
			if gone != nil {
				gone()
			}
			return
		}
		h.run(inc, what, func() {
			if h.inst != nil && fn != nil {
				fn(h.inst)
			}
		})
	})
}

// Step runs the next event. It returns false when none is pending.
func (w *World) Step() bool { return w.clock.Step() }

// RunFor runs the simulation for d of simulated time.
func (w *World) RunFor(d time.Duration) { w.clock.RunFor(d) }

// RunUntil runs events until pred returns true, and reports whether it did.
// It gives up, returning false, once maxWait of simulated time has passed or
// no event is pending. pred is checked before the first event and after
// each one.
func (w *World) RunUntil(pred func() bool, maxWait time.Duration) bool {
	expired := false
	w.clock.After(maxWait, func() { expired = true })
	for {
		if pred() {
			return true
		}
		if expired || !w.clock.Step() {
			return false
		}
	}
}
