package clock

import (
	"container/heap"
	"math"
	"time"
)

// Sim is the simulator's clock and event heap: one single thread of control
// for a whole simulated cluster.
//
// Time stands still while an event runs and jumps to the next event's time
// when it is popped. Events run in (time, seq) order, where seq is a counter
// assigned when the event is scheduled, so two events due at the same instant
// run in the order they were scheduled. That makes a run a pure function of
// the order in which events are scheduled, which is what lets a seed replay.
//
// Sim implements Clock and Scheduler. It is not safe for concurrent use and
// starts no goroutines.
type Sim struct {
	// start is the wall time at Monotonic() == 0.
	start time.Time
	// now is the current simulated monotonic time.
	// Invariant: now never decreases, and now <= every pending event's at.
	now time.Duration
	// seqNext is the sequence number the next scheduled event gets.
	seqNext  uint64
	events   eventHeap
	executed uint64
	hook     func(at time.Duration, seq uint64)
}

// NewSim returns a simulated clock at monotonic time zero, whose wall clock
// reads start at that instant.
func NewSim(start time.Time) *Sim {
	return &Sim{start: start}
}

// Now returns the simulated wall time: start plus the monotonic time.
func (s *Sim) Now() time.Time { return s.start.Add(s.now) }

// Monotonic returns the simulated time elapsed since NewSim.
func (s *Sim) Monotonic() time.Duration { return s.now }

// After schedules fn to run d from now. A zero or negative d schedules it at
// the current instant, after every event already scheduled for that instant
// (so after the event now running). A nil fn is ignored. A d that would
// overflow is clamped to the end of time.
func (s *Sim) After(d time.Duration, fn func()) {
	if d < 0 {
		d = 0
	}
	at := s.now + d
	if at < s.now { // overflow
		at = math.MaxInt64
	}
	s.push(at, fn)
}

// At schedules fn to run at monotonic time t; a t in the past means now.
// A nil fn is ignored.
func (s *Sim) At(t time.Duration, fn func()) {
	if t < s.now {
		t = s.now
	}
	s.push(t, fn)
}

func (s *Sim) push(at time.Duration, fn func()) {
	if fn == nil {
		return
	}
	heap.Push(&s.events, event{at: at, seq: s.seqNext, fn: fn})
	s.seqNext++
}

// Step runs the earliest pending event: it advances time to the event's
// time, calls the hook, then the event. It returns false, doing nothing,
// when no event is pending.
func (s *Sim) Step() bool {
	if len(s.events) == 0 {
		return false
	}
	ev := heap.Pop(&s.events).(event)
	s.now = ev.at
	s.executed++
	if s.hook != nil {
		s.hook(ev.at, ev.seq)
	}
	ev.fn()
	return true
}

// RunUntil runs every event due at or before t, including events those
// events schedule, then sets the time to t. If t is in the past, no event
// is due by then: nothing runs and time does not move backwards.
func (s *Sim) RunUntil(t time.Duration) {
	for len(s.events) > 0 && s.events[0].at <= t {
		s.Step()
	}
	if t > s.now {
		s.now = t
	}
}

// RunFor runs the simulation for d of simulated time: RunUntil(now + d).
func (s *Sim) RunFor(d time.Duration) {
	t := s.now + d
	if d > 0 && t < s.now { // overflow
		t = math.MaxInt64
	}
	s.RunUntil(t)
}

// Pending returns the number of events scheduled and not yet run.
func (s *Sim) Pending() int { return len(s.events) }

// Executed returns the number of events run so far.
func (s *Sim) Executed() uint64 { return s.executed }

// SetHook installs fn to be called before each event runs, with the event's
// time and sequence number: the simulator's trace. A nil fn removes the hook.
func (s *Sim) SetHook(fn func(at time.Duration, seq uint64)) { s.hook = fn }

// NodeClock returns a per-node view of the simulated time whose wall clock
// the simulator can skew and jump. Its offset starts at zero.
func (s *Sim) NodeClock() *SkewClock { return &SkewClock{sim: s} }

// event is one scheduled function.
type event struct {
	at  time.Duration
	seq uint64
	fn  func()
}

// eventHeap is a min-heap of events by (at, seq). seq is unique, so the
// order is total and does not depend on the heap's internal layout.
type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	ev := old[len(old)-1]
	old[len(old)-1] = event{} // let the closure be collected
	*h = old[:len(old)-1]
	return ev
}
