package logstore

import (
	"testing"
)

// Pipelined group commit (sync.go): plans in flight at once, finished in
// order, each later plan syncing the earlier ones' files, and one meta
// record in flight at a time.

// A plan prepared while another is in flight makes everything before it
// durable on its own: here plan 1 covers entries in a segment that rolled
// before plan 2 was prepared, plan 2 carries the meta record (a new term,
// commit at the last entry), and only plan 2's Run reaches the disk before
// a crash that loses every unsynced write. The recovered meta record's
// commit index must name entries the segments hold: plan 2 synced the
// rolled segment too.
func TestPipelinedPlanSyncsEarlierPlansFiles(t *testing.T) {
	fsys := newSim(41)
	opts := Options{SegmentBytes: 1 << 10}
	l, _ := openLog(t, fsys, opts)
	l.SetHardState(HardState{Term: 1, Vote: 1})
	must(t, l.Sync())
	// Fill the first segment exactly up to its roll.
	for len(segmentNames(t, fsys)) < 2 {
		appendBatches(t, l, 1, 1, 1, 0)
	}
	p1 := l.PrepareSync()
	if p1 == nil || p1.hasMeta {
		t.Fatalf("plan 1: %v (a plan without a meta record wanted)", p1)
	}
	appendBatches(t, l, 3, 1, 2, 0)
	last := l.LastIndex()
	l.SetHardState(HardState{Term: 2, Vote: 1, Commit: last})
	if l.SyncBlocked() {
		t.Fatal("blocked with one plan and no meta record in flight")
	}
	p2 := l.PrepareSync()
	if p2 == nil || !p2.hasMeta {
		t.Fatalf("plan 2: %v (a meta record wanted)", p2)
	}
	if l.PrepareSync() != nil || !l.SyncBlocked() {
		t.Fatal("a third plan in flight")
	}
	must(t, p2.Run()) // plan 1's Run never happens: the crash comes first
	fsys.CrashWith(CrashLoseAll)
	l, rec := openLog(t, fsys, opts)
	hs := l.HardState()
	if hs.Term != 2 || hs.Commit != last {
		t.Fatalf("recovered hard state %+v, want term 2 commit %d", hs, last)
	}
	if l.LastIndex() < hs.Commit || rec.Reason != "" {
		t.Fatalf("recovered commit %d past the log's last index %d (%q): plan 2 did not sync plan 1's segment",
			hs.Commit, l.LastIndex(), rec.Reason)
	}
}

// Plans finish in the order they were prepared; a truncation lowers the
// cap of every plan in flight; a meta record that must be written waits
// for the one in flight (two at once could both be torn).
func TestPipelinedPlansOrderAndMeta(t *testing.T) {
	fsys := newSim(42)
	l, _ := openLog(t, fsys, Options{})
	appendBatches(t, l, 5, 1, 1, 0)
	l.SetHardState(HardState{Term: 1, Vote: 1})
	p1 := l.PrepareSync()
	if p1 == nil || !p1.hasMeta {
		t.Fatal("plan 1 should carry the meta record (term and vote)")
	}
	appendBatches(t, l, 5, 1, 1, 0)
	l.SetHardState(HardState{Term: 2, Vote: 2})
	if !l.SyncBlocked() || l.PrepareSync() != nil {
		t.Fatal("a second meta record prepared while one is in flight")
	}
	must(t, p1.Run())
	l.FinishSync(p1, nil)
	if l.DurableIndex() != 5 || l.DurableHardState().Term != 1 {
		t.Fatalf("durable %d %+v after plan 1", l.DurableIndex(), l.DurableHardState())
	}
	p2 := l.PrepareSync()
	if p2 == nil || !p2.hasMeta {
		t.Fatal("plan 2 should carry the new term")
	}
	// A routine commit refresh does not block, and waits for a later plan.
	appendBatches(t, l, 40, 1, 2, 0)
	l.SetHardState(HardState{Term: 2, Vote: 2, Commit: 45})
	if l.SyncBlocked() {
		t.Fatal("a routine commit refresh blocked the pipeline")
	}
	p3 := l.PrepareSync()
	if p3 == nil || p3.hasMeta {
		t.Fatal("plan 3 should be prepared without a meta record")
	}
	// A truncation caps both plans in flight.
	must(t, l.TruncateAfter(8))
	must(t, p3.Run())
	must(t, p2.Run())
	l.FinishSync(p2, nil)
	l.FinishSync(p3, nil)
	if l.DurableIndex() != 8 {
		t.Fatalf("durable %d after truncating to 8 under plans for 10 and 50", l.DurableIndex())
	}
	if l.SyncsInFlight() != 0 {
		t.Fatalf("%d plans still in flight", l.SyncsInFlight())
	}
}

// FinishSync out of order is refused: the later plan stays in flight and
// claims nothing (with assertions on it is a violation).
func TestPipelinedFinishOutOfOrder(t *testing.T) {
	fsys := newSim(43)
	l, _ := openLog(t, fsys, Options{})
	appendBatches(t, l, 3, 1, 1, 0)
	p1 := l.PrepareSync()
	appendBatches(t, l, 3, 1, 1, 0)
	p2 := l.PrepareSync()
	if p1 == nil || p2 == nil {
		t.Fatal("two plans wanted")
	}
	must(t, p2.Run())
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("no assertion for plan 2 finishing before plan 1")
			}
		}()
		l.FinishSync(p2, nil)
	}()
	if l.DurableIndex() != 0 || l.SyncsInFlight() != 2 {
		t.Fatalf("durable %d, %d in flight after an out-of-order finish", l.DurableIndex(), l.SyncsInFlight())
	}
	must(t, p1.Run())
	l.FinishSync(p1, nil)
	l.FinishSync(p2, nil)
	if l.DurableIndex() != 6 {
		t.Fatalf("durable %d", l.DurableIndex())
	}
}
