package node

import (
	"slices"
	"testing"
	"time"
)

// runPass drives one pass of w over list the way process does, calling
// visit for each group it hands out; visit returns whether to keep it.
func runPass(w *workSet, list []uint64, visit func(g uint64) bool) []uint64 {
	var order []uint64
	w.begin(list)
	i := 0
	for {
		g, ok := w.nextGroup(&i)
		if !ok {
			break
		}
		order = append(order, g)
		w.visited(g, visit(g))
	}
	w.end()
	return order
}

// TestWorkSetPassOrder: a pass hands out the marked groups in increasing
// order, once each; a group marked during the pass is handed out in that
// pass only if the pass has not reached it and it is in the pass's list
// (as the full walk over that list did), else in the next pass.
func TestWorkSetPassOrder(t *testing.T) {
	list := []uint64{1, 3, 5, 7, 9, 11}
	w := newWorkSet()
	// The first pass after creation visits every group.
	if got := runPass(&w, list, func(uint64) bool { return false }); !slices.Equal(got, list) {
		t.Fatalf("first pass visited %v, want every group %v", got, list)
	}
	if got := runPass(&w, list, func(uint64) bool { return false }); len(got) != 0 {
		t.Fatalf("idle pass visited %v, want none", got)
	}
	w.mark(7)
	w.mark(3)
	w.mark(3)
	got := runPass(&w, list, func(g uint64) bool {
		if g == 3 {
			w.mark(1)   // behind: next pass
			w.mark(9)   // ahead, in the list: this pass
			w.mark(4)   // not in the list (added during the pass): next pass
			w.mark(7)   // ahead, already marked: once
			w.mark(3)   // itself
			return true // keep: next pass too
		}
		return false
	})
	if want := []uint64{3, 7, 9}; !slices.Equal(got, want) {
		t.Fatalf("pass visited %v, want %v", got, want)
	}
	if got := runPass(&w, []uint64{1, 3, 4, 5, 7, 9, 11}, func(uint64) bool { return false }); !slices.Equal(got, []uint64{1, 3, 4}) {
		t.Fatalf("next pass visited %v, want [1 3 4]", got)
	}
	// A group marked between passes but removed before the next is
	// dropped.
	w.mark(5)
	if got := runPass(&w, []uint64{1, 3}, func(uint64) bool { return false }); len(got) != 0 {
		t.Fatalf("pass visited removed group: %v", got)
	}
	// markAll (a tick): a full pass, marks during it behave the same.
	w.mark(9)
	w.markAll()
	got = runPass(&w, list, func(g uint64) bool {
		if g == 5 {
			w.mark(3)  // behind
			w.mark(11) // ahead: the walk reaches it anyway, once
		}
		return g == 9
	})
	if !slices.Equal(got, list) {
		t.Fatalf("full pass visited %v, want %v", got, list)
	}
	if got := runPass(&w, list, func(uint64) bool { return false }); !slices.Equal(got, []uint64{3, 9}) {
		t.Fatalf("after the full pass visited %v, want [3 9]", got)
	}
}

// TestWorkSetFullPassSelfMark: a group whose own visit in a full pass
// (after a tick) marks it, and that stays Busy, is handed out once in the
// next pass, not twice (sim seed 2's trace changed when it was queued
// twice: the second visit took a Ready the old pass took a pass later).
func TestWorkSetFullPassSelfMark(t *testing.T) {
	list := []uint64{1, 24, 30}
	w := newWorkSet()
	runPass(&w, list, func(g uint64) bool {
		w.mark(g) // Take reports the change (replica.changed)
		return g != 30
	})
	var got []uint64
	runPass(&w, list, func(g uint64) bool {
		got = append(got, g)
		w.mark(g)
		return false
	})
	if want := []uint64{1, 24}; !slices.Equal(got, want) {
		t.Fatalf("the pass after a full one visited %v, want %v", got, want)
	}
}

// TestWorkSetHeap: the min-heap hands out what it was given, sorted.
func TestWorkSetHeap(t *testing.T) {
	var h groupHeap
	in := []uint64{50, 3, 99, 3 + 1<<40, 7, 1, 64, 2, 8, 1 << 33}
	for _, g := range in {
		h.push(g)
	}
	var out []uint64
	for len(h) > 0 {
		out = append(out, h.pop())
	}
	want := slices.Clone(in)
	slices.Sort(want)
	if !slices.Equal(out, want) {
		t.Fatalf("heap order %v, want %v", out, want)
	}
}

// TestProcessVisitsOnlyGroupsThatMayHaveWork: on an idle broker with many
// partitions, a process pass that follows no tick visits only the groups
// that were marked since the last pass (none here: those with work were
// handled), not all of them; each pass that asked every group made a
// restart with 10,000 partitions quadratic. Every node test also checks
// after each pass (checkWorkSet) that no group outside the set has work.
func TestProcessVisitsOnlyGroupsThatMayHaveWork(t *testing.T) {
	const partitions = 64
	c := newCluster(t, 1, 21)
	c.waitReady()
	createTopic(t, c, 1, "many", partitions, 1, nil)
	waitLeaders(t, c, "many", partitions)
	c.runFor(time.Second)
	r := c.nodes[1].r
	groups := len(r.groupIDs())
	r.process() // may follow a tick: then it visits every group
	before, _ := r.Stats()
	r.process()
	after, _ := r.Stats()
	busy := 0
	for _, g := range r.groupIDs() {
		if rep := r.replicaOf(g); rep != nil && rep.Busy() {
			busy++
		}
	}
	visits := after.ProcessVisits - before.ProcessVisits
	t.Logf("%d groups, %d busy, the second pass visited %d", groups, busy, visits)
	if groups < partitions || visits > uint64(busy) {
		t.Fatalf("a pass on an idle broker visited %d of %d groups (%d busy)", visits, groups, busy)
	}
}
