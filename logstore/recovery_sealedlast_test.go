package logstore

import (
	"path"
	"testing"
)

// A crash can keep the index file a roll wrote for the segment it sealed
// and lose the roll's creation of the next segment (the directory keeps a
// prefix of its pending operations: the index's create, not the
// segment's). The chain then ends with a sealed segment, which recovery
// rescans as the active one. When that segment starts at or below the
// snapshot point, its first entries may have a term below the snapshot's:
// they are valid, and must not be cut. Sim seed 941582 (controller log,
// segment 43-70, snapshot at 49 of term 6, entry 43 of term 5): the rescan
// checked entry 43 against term 6, cut the whole segment, and the log
// restarted at the snapshot, losing the durable entries 50-70 and its
// recorded commit 56.
func TestSealedLastSegmentStartingBelowSnapshotKeepsItsEntries(t *testing.T) {
	fsys := newSim(1)
	roll := false
	opts := Options{RollEarly: func() bool { r := roll; roll = false; return r }}
	l, _ := openLog(t, fsys, opts)
	appendBatches(t, l, 2, 1, 1, 0) // segment 1: entries 1-2, term 1
	roll = true
	appendBatches(t, l, 1, 1, 1, 0) // segment 3: entry 3 (term 1), 4-5 (term 2)
	appendBatches(t, l, 2, 1, 2, 0)
	l.SetHardState(HardState{Term: 2, Commit: 5})
	must(t, l.Sync())
	must(t, l.SetSnapshot(SnapshotMeta{Index: 4, Term: 2, NextOffset: l.OffsetAfterIndex(4)}))
	if n, err := l.CompactTo(4); err != nil || n != 1 {
		t.Fatalf("compact to 4: removed %d segments, err %v; want 1", n, err)
	}
	must(t, l.Sync())
	must(t, l.Sync()) // the compacted segment's files go after the meta record
	roll = true
	appendBatches(t, l, 1, 1, 2, 0) // seals segment 3, entry 6 in a new segment
	segs := segmentNames(t, fsys)
	if len(segs) != 2 {
		t.Fatalf("want segments 3 and 6, have %v", segs)
	}
	fsys.CrashWith(CrashKeepAll)
	must(t, fsys.Remove(path.Join("p0", segs[1]))) // the create the crash lost

	l, rec := openLog(t, fsys, opts)
	defer l.Close()
	if rec.EntriesCut != 0 || rec.Corrupt || l.LastIndex() != 5 {
		t.Fatalf("recovery cut the sealed last segment: last index %d, %+v; want entries to 5 kept", l.LastIndex(), rec)
	}
	if got := l.HardState().Commit; got != 5 {
		t.Fatalf("recorded commit %d, want 5", got)
	}
	if term, err := l.Term(5); err != nil || term != 2 {
		t.Fatalf("entry 5: term %d, err %v; want term 2", term, err)
	}
	// Entries 3 and 4, below the snapshot point, are still the Kafka log's.
	if got := len(readAllBatches(t, l)); got != 3 {
		t.Fatalf("%d batches readable, want 3 (entries 3-5)", got)
	}
}
