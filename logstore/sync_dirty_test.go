package logstore

import (
	"fmt"
	"testing"
)

// The files a plan syncs (sync.go's dirty and dirtySet): every file
// written since the last plan, once each, whatever the number of rolls in
// between; a file written again after a plan is in the next one.

// checkDirty states the invariant of the dirty list and its set: the same
// files, none twice.
func checkDirty(t tb, l *Log, step string) {
	t.Helper()
	if len(l.sy.dirtySet) != len(l.sy.dirty) {
		t.Fatalf("after %s: %d dirty files, %d in the set", step, len(l.sy.dirty), len(l.sy.dirtySet))
	}
	for _, f := range l.sy.dirty {
		if _, ok := l.sy.dirtySet[f]; !ok {
			t.Fatalf("after %s: a dirty file missing from the set", step)
		}
	}
}

// planHolds reports whether p syncs f, and fails on a file listed twice.
func planHolds(t *testing.T, p *SyncPlan, f File) bool {
	t.Helper()
	n := 0
	for _, g := range p.files {
		if g == f {
			n++
		}
	}
	if n > 1 {
		t.Fatalf("plan %d syncs one file %d times", p.seq, n)
	}
	return n == 1
}

// A follower catching up takes thousands of entries in one Ready, rolling
// a small segment every few entries: one plan then syncs every segment
// and index file written, once each; the active segment, written again
// after that plan, is in the next plan; a plan prepared with another in
// flight holds both plans' files once each; and what the plans covered
// survives a crash that loses every unsynced write.
func TestPlanSyncsEveryFileWrittenOnce(t *testing.T) {
	fsys := newSim(43)
	opts := Options{SegmentBytes: 400}
	l, _ := openLog(t, fsys, opts)
	must(t, l.Append(oneRecordEntries(t, 3000)...))
	checkDirty(t, l, "one append of 3,000 entries")
	for l.active().size > opts.SegmentBytes/2 {
		appendBatches(t, l, 1, 1, 1, 0) // room in the active segment for one more after plan 1
	}
	if len(l.segs) < 500 {
		t.Fatalf("%d segments: the test wants hundreds of rolls in one append", len(l.segs))
	}
	p1 := l.PrepareSync()
	checkDirty(t, l, "a plan")
	if len(l.sy.dirty) != 0 {
		t.Fatalf("%d files dirty after a plan took them", len(l.sy.dirty))
	}
	for i, s := range l.segs {
		if !planHolds(t, p1, s.f) {
			t.Fatalf("plan 1 does not sync segment %d of %d (%s)", i, len(l.segs), s.name)
		}
	}
	// Each sealed segment's index file was created after its segment
	// file: one per roll, in the plan besides the segment files.
	if want := 2*len(l.segs) - 1; len(p1.files) != want {
		t.Fatalf("plan 1 syncs %d files, want %d (%d segment files and an index file per sealed one)",
			len(p1.files), want, len(l.segs))
	}

	active := l.active().f
	appendBatches(t, l, 1, 1, 1, 0) // into the active segment, synced by plan 1 already
	checkDirty(t, l, "an append after the plan")
	if l.active().f != active {
		t.Fatal("the append after plan 1 rolled: the test wants it in the segment plan 1 synced")
	}
	p2 := l.PrepareSync()
	if p2 == nil || !planHolds(t, p2, active) {
		t.Fatal("plan 2 does not sync the active segment written after plan 1")
	}
	for _, f := range p1.files {
		if !planHolds(t, p2, f) {
			t.Fatal("plan 2, prepared with plan 1 in flight, misses one of plan 1's files")
		}
	}
	if len(p2.files) != len(p1.files) {
		t.Fatalf("plan 2 syncs %d files, plan 1 %d: plan 2 wrote only to a file plan 1 holds", len(p2.files), len(p1.files))
	}
	last := l.LastIndex()
	must(t, p2.Run()) // plan 1's Run never happens: the crash comes first
	fsys.CrashWith(CrashLoseAll)
	l, rec := openLog(t, fsys, opts)
	if l.LastIndex() != last || rec.Reason != "" {
		t.Fatalf("recovered last index %d (%q), want %d: plan 2 did not sync everything written before it",
			l.LastIndex(), rec.Reason, last)
	}
}

// oneRecordEntries returns n batch entries of one record each, indexes
// and offsets from the start of a log: what one Ready of a follower
// catching up from nothing appends.
func oneRecordEntries(t tb, n int) []Entry {
	es := make([]Entry, n)
	for i := range es {
		es[i] = Entry{Index: uint64(i + 1), Term: 1, Kind: KindBatch,
			Data: simpleBatch(t, int64(i), 1, 0, fmt.Sprintf("e%d", i+1))}
	}
	return es
}
