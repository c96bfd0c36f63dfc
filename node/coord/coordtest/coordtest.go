// Package coordtest has the deterministic fakes that drive a coordinator
// (node/group, node/txn) in its tests: a timer heap on the test's clock,
// and a log whose writes commit at once or wait for the test to decide.
package coordtest

import (
	"container/heap"
	"time"

	"github.com/floe-broker/floe/node/coord"
)

// Timers is a coord.Timers on the test's clock *Now: timers fire only in
// Advance, in order of due time, ties in the order they were set.
type Timers struct {
	Now *time.Duration
	q   timerQueue
	seq uint64
}

// After implements coord.Timers.
func (f *Timers) After(d time.Duration, fn func(time.Duration)) {
	f.seq++
	heap.Push(&f.q, timerEntry{at: *f.Now + max(d, 0), seq: f.seq, fn: fn})
}

// Advance moves *Now forward by d, firing each due timer at its own time.
func (f *Timers) Advance(d time.Duration) {
	end := *f.Now + d
	for f.q.Len() > 0 && f.q[0].at <= end {
		e := heap.Pop(&f.q).(timerEntry)
		*f.Now = e.at
		e.fn(e.at)
	}
	*f.Now = end
}

// Clear drops every pending timer, as a coordinator's node does when the
// coordinator is replaced.
func (f *Timers) Clear() { f.q = nil }

type timerEntry struct {
	at  time.Duration
	seq uint64
	fn  func(time.Duration)
}

type timerQueue []timerEntry

func (q timerQueue) Len() int { return len(q) }
func (q timerQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q timerQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *timerQueue) Push(x any)   { *q = append(*q, x.(timerEntry)) }
func (q *timerQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// Log is a coord.Log. Writes commit at once, unless FailWith is set (then
// each fails with it, at once) or Hold is (then they queue until
// CommitAll, FailAll, CommitNext or FailNext). Committed keeps every committed record in order, for replay.
type Log struct {
	Now       *time.Duration
	Hold      bool
	FailWith  error
	Queued    []Pending
	Committed []coord.Record
	Writes    int // every Write, whatever became of it
}

// Pending is a write held back by Log.Hold.
type Pending struct {
	Recs []coord.Record
	Done func(time.Duration, error)
}

// Write implements coord.Log.
func (l *Log) Write(recs []coord.Record, done func(time.Duration, error)) {
	l.Writes++
	switch {
	case l.FailWith != nil:
		done(*l.Now, l.FailWith)
	case l.Hold:
		l.Queued = append(l.Queued, Pending{recs, done})
	default:
		l.Committed = append(l.Committed, recs...)
		done(*l.Now, nil)
	}
}

// CommitAll commits the queued writes in order, and those their callbacks
// queue meanwhile.
func (l *Log) CommitAll() {
	for len(l.Queued) > 0 {
		w := l.Queued[0]
		l.Queued = l.Queued[1:]
		l.Committed = append(l.Committed, w.Recs...)
		w.Done(*l.Now, nil)
	}
}

// CommitNext commits the oldest queued write; it reports whether there
// was one.
func (l *Log) CommitNext() bool {
	if len(l.Queued) == 0 {
		return false
	}
	w := l.Queued[0]
	l.Queued = l.Queued[1:]
	l.Committed = append(l.Committed, w.Recs...)
	w.Done(*l.Now, nil)
	return true
}

// FailNext fails the oldest queued write with err, as a write refused
// before it was appended: the writes queued after it may still commit.
// It reports whether there was one.
func (l *Log) FailNext(err error) bool {
	if len(l.Queued) == 0 {
		return false
	}
	w := l.Queued[0]
	l.Queued = l.Queued[1:]
	w.Done(*l.Now, err)
	return true
}

// FailAll fails the queued writes with err, in order, and those their
// callbacks queue meanwhile.
func (l *Log) FailAll(err error) {
	for len(l.Queued) > 0 {
		w := l.Queued[0]
		l.Queued = l.Queued[1:]
		w.Done(*l.Now, err)
	}
}
