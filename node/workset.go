package node

import (
	"slices"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/internal/assert"
)

// workSet holds the local groups process must visit: a superset of those
// whose replica is Busy or HasWork. Asking every group on every pass made
// a restart with many partitions quadratic (issue 21: a restart opens two
// replicas per pass, so 10,000 partitions meant 5,000 passes over up to
// 10,000 groups). A group joins the set when anything may have given its
// Raft node work: the replica reports every call that drives Raft or
// changes its Ready in flight, and the Host every message it steps
// (consensus.Host.SetChanged); a tick changes every group, so the pass
// after one visits them all. A pass drops a group it finds neither Busy
// nor with work.
//
// A pass visits exactly the groups the old full pass acted on, in the
// same order: it walks the groups of the list taken when it starts
// (groupIDs) in increasing order; a group that gains work during the pass
// is visited in that pass if the pass has not reached it yet and it is in
// the list, else in the next pass, as before. So the simulator's traces
// do not change.
type workSet struct {
	in map[uint64]bool // members
	// next holds members the pass has not reached (ahead of cursor, in
	// the pass's list), or all members between passes.
	next groupHeap
	// later holds members the current pass has passed, or not in its
	// list: the next pass's.
	later []uint64
	all   bool // every group may have work: the next pass visits them all

	inPass  bool
	full    bool     // the current pass visits every group of list
	list    []uint64 // the current pass's groups, sorted (groupIDs)
	cursor  uint64   // the group the current pass is at
	reached bool     // cursor is set (the pass visited a group)
}

func newWorkSet() workSet { return workSet{in: map[uint64]bool{}, all: true} }

// mark adds group g: it may have work.
func (w *workSet) mark(g uint64) {
	if w.in[g] {
		return
	}
	if w.all && !w.inPass {
		return // the next pass visits every group
	}
	w.in[g] = true
	switch {
	case !w.inPass:
		w.next.push(g)
	case w.reached && g <= w.cursor, !w.inList(g):
		w.later = append(w.later, g)
	case w.full:
		// The full walk reaches it.
	default:
		w.next.push(g)
	}
}

// markAll makes the next pass visit every group.
func (w *workSet) markAll() { w.all = true }

func (w *workSet) inList(g uint64) bool {
	_, ok := slices.BinarySearch(w.list, g)
	return ok
}

// begin starts a pass over list, the groups sorted.
func (w *workSet) begin(list []uint64) {
	w.inPass, w.list, w.reached = true, list, false
	w.full = w.all
	w.all = false
	if w.full {
		// The walk decides anew for every group of the list; members
		// not in it are groups since removed.
		clear(w.in)
		w.next = w.next[:0]
	}
	w.later = w.later[:0]
}

// nextGroup returns the pass's next group, from position *i of the list
// for a full pass, and false when the pass is over.
func (w *workSet) nextGroup(i *int) (uint64, bool) {
	if w.full {
		for *i < len(w.list) {
			g := w.list[*i]
			*i++
			if w.reached && g <= w.cursor {
				continue
			}
			// A member while visited, like in a sparse pass: a mark of
			// g by its own visit must not queue it again.
			w.in[g] = true
			w.cursor, w.reached = g, true
			return g, true
		}
		return 0, false
	}
	for len(w.next) > 0 {
		g := w.next.pop()
		if w.reached && g <= w.cursor {
			continue // a duplicate: never pushed, but a pass visits a group once
		}
		if !w.inList(g) {
			delete(w.in, g) // removed before the pass began
			continue
		}
		w.cursor, w.reached = g, true
		return g, true
	}
	return 0, false
}

// visited records what the pass found at g: keep says g may still have
// work (Busy, or a Ready was just taken).
func (w *workSet) visited(g uint64, keep bool) {
	if keep {
		w.in[g] = true
		w.later = append(w.later, g)
		return
	}
	delete(w.in, g)
}

// end finishes the pass: the members it passed or deferred wait for the
// next one.
func (w *workSet) end() {
	slices.Sort(w.later)
	w.later = slices.Compact(w.later)
	for _, g := range w.later {
		if w.in[g] {
			w.next.push(g)
		}
	}
	w.later = w.later[:0]
	w.inPass, w.full, w.list = false, false, nil
}

// checkWorkSet asserts the set's invariant after a pass (with assertions
// on: tests and the simulator): every local group outside the set is
// idle. It asks every group, the cost the set saves production.
func (r *Reactor) checkWorkSet() {
	if !assert.Enabled() || r.work.all {
		return
	}
	for _, g := range r.groupIDs() {
		rep := r.replicaOf(g)
		if rep == nil || r.work.in[g] {
			continue
		}
		if rep.Busy() || rep.HasWork() {
			assert.Failf("node %d: group %d has work but is not in the work set", r.self, g)
		}
	}
}

// workChanged is the Host's SetChanged hook.
func (r *Reactor) workChanged(g consensus.GroupID) { r.work.mark(uint64(g)) }

// groupHeap is a min-heap of group ids. Not container/heap: its any
// arguments would allocate a box per push on the produce path.
type groupHeap []uint64

func (h *groupHeap) push(g uint64) {
	*h = append(*h, g)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p] <= s[i] {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *groupHeap) pop() uint64 {
	s := *h
	g := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && s[c+1] < s[c] {
			c++
		}
		if s[i] <= s[c] {
			break
		}
		s[i], s[c] = s[c], s[i]
		i = c
	}
	*h = s
	return g
}
