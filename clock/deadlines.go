package clock

import (
	"container/heap"
	"time"
)

// TimerID names a timer in a Deadlines queue. IDs are assigned in increasing
// order from 1 and never reused, so a stale ID can never cancel a newer timer.
type TimerID uint64

// Deadlines is a deterministic deadline queue: the timers a reactor keeps for
// itself (Fetch max wait, session timeouts, request timeouts).
//
// It is pure data. It never reads a clock: callers pass monotonic times in,
// and the runtime asks Next for when to wake the reactor and then calls Fire
// with the current Monotonic time. Timers due together fire in (at, id)
// order, so a run depends only on the order timers were added.
//
// Deadlines is not safe for concurrent use; it belongs to one reactor.
type Deadlines struct {
	timers timerHeap
	// live maps the ID of every timer that may still run to its entry: those
	// in the heap, and those Fire has taken out but not yet run.
	// Invariant: every entry in timers is in live.
	live   map[TimerID]*timer
	idNext TimerID
}

// NewDeadlines returns an empty queue.
func NewDeadlines() *Deadlines {
	return &Deadlines{live: make(map[TimerID]*timer), idNext: 1}
}

// Add arranges for fn to run on the first Fire whose now is at or after at (a
// Monotonic time), and returns the timer's ID. A nil fn is allowed and makes a
// timer that only occupies its place in Next.
func (q *Deadlines) Add(at time.Duration, fn func()) TimerID {
	t := &timer{at: at, id: q.idNext, fn: fn}
	q.idNext++
	heap.Push(&q.timers, t)
	q.live[t.id] = t
	return t.id
}

// Cancel stops the timer from running. It reports whether it did: false if the
// timer already ran, is running now, was cancelled, or never existed. A timer
// that is due in the Fire now running, but has not run yet, can be cancelled.
func (q *Deadlines) Cancel(id TimerID) bool {
	t, ok := q.live[id]
	if !ok {
		return false
	}
	delete(q.live, id)
	if t.index >= 0 {
		heap.Remove(&q.timers, t.index)
	}
	t.cancelled = true
	return true
}

// Next returns the earliest pending deadline; ok is false when none is pending.
func (q *Deadlines) Next() (at time.Duration, ok bool) {
	if len(q.timers) == 0 {
		return 0, false
	}
	return q.timers[0].at, true
}

// Len returns the number of pending timers.
func (q *Deadlines) Len() int { return len(q.timers) }

// Fire runs every timer due at or before now, in (at, id) order, and returns
// how many ran. A timer's fn may Add and Cancel freely. Timers it adds do not
// run in this Fire, even when already due: they wait for the next Fire. That
// bounds the work of one call, so a timer that re-arms itself at "now" cannot
// spin the reactor forever; the runtime sees them through Next.
func (q *Deadlines) Fire(now time.Duration) int {
	var due []*timer
	for len(q.timers) > 0 && q.timers[0].at <= now {
		due = append(due, heap.Pop(&q.timers).(*timer))
	}
	ran := 0
	for _, t := range due {
		if t.cancelled {
			continue // cancelled by an earlier timer of this Fire
		}
		delete(q.live, t.id)
		if t.fn != nil {
			t.fn()
		}
		ran++
	}
	return ran
}

// timer is one entry of a Deadlines queue.
type timer struct {
	at time.Duration
	id TimerID
	fn func()
	// index is the timer's position in the heap, or -1 once it left it.
	index     int
	cancelled bool
}

// timerHeap is a min-heap of timers by (at, id), tracking each timer's index
// so Cancel can remove it in O(log n).
type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].id < h[j].id
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*h = old[:len(old)-1]
	return t
}
