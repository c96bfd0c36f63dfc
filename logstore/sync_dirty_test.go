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
	var es []Entry
	for i := 0; i < 3000; i++ {
		es = append(es, Entry{Index: uint64(i + 1), Term: 1, Kind: KindBatch,
			Data: simpleBatch(t, int64(i), 1, 0, fmt.Sprintf("e%d", i+1))})
	}
	must(t, l.Append(es...))
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

// BenchmarkAppendRollsOneSync is a follower's catch-up in one Ready: each
// iteration appends n one-record entries to a fresh log of 400-byte
// segments (a roll every three entries) and prepares one plan. Before the
// dirty set the time per entry grew with n (a scan of every file written
// so far at each roll).
func BenchmarkAppendRollsOneSync(b *testing.B) {
	for _, n := range []int{2000, 8000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			es := make([]Entry, n)
			for i := range es {
				es[i] = Entry{Index: uint64(i + 1), Term: 1, Kind: KindBatch,
					Data: simpleBatch(b, int64(i), 1, 0, fmt.Sprintf("e%d", i+1))}
			}
			b.ReportAllocs()
			for b.Loop() {
				l, _, err := Open(newSim(1), "p0", Options{SegmentBytes: 400})
				if err != nil {
					b.Fatal(err)
				}
				must(b, l.Append(es...))
				if l.PrepareSync() == nil {
					b.Fatal("no plan")
				}
			}
		})
	}
}
