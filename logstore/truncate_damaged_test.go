package logstore

// Repair cuts a log just before its first damaged entry (node/repair.go).
// The cut must not need to read that entry's header.

import (
	"errors"
	"path"
	"testing"
)

// A flipped bit in an entry's header (its term field, which the header
// check covers): TruncateAfter cuts just before that entry, and the log
// then takes new entries and reads back whole, after a reopen too. Before
// the fix the cut looked for where the damaged entry begins by reading its
// header, failed with ErrCorrupt every time, and the damaged entry stayed
// (sim seed 962084 with --all-faults: a broker's controller replica
// repaired its entry 16 every tick for 30 s and its metadata never got
// past it, so a partition lacked the replica whose vote it needed).
func TestTruncateBeforeEntryWithDamagedHeader(t *testing.T) {
	cuts := 0
	for _, opts := range []Options{{}, smallSegments} {
		fsys, es, segs := writtenBatches(t, 21, opts, 30, 2)
		// An entry in the middle, in a segment before the active one when
		// there are several (recovery does not scan a sealed segment).
		target := es[len(es)/2]
		var seg string
		var at int64
		for _, name := range segs {
			if pos := lengthFieldAt(t, fsys, path.Join("p0", name), target.Index); pos != 0 {
				seg, at = path.Join("p0", name), pos
			}
		}
		if seg == "" {
			t.Fatalf("entry %d in no segment of %v", target.Index, segs)
		}
		must(t, fsys.FlipBit(seg, at+16, 3)) // the term field (header offset 24)
		l, _ := openLog(t, fsys, opts)
		if l.LastIndex() < target.Index {
			// Recovery found the damage in the active segment and cut it:
			// nothing left for the cut under test.
			must(t, l.Close())
			continue
		}
		if _, err := l.Entries(target.Index, target.Index+1, 0); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%+v: entry %d read with %v, want ErrCorrupt", opts, target.Index, err)
		}
		if err := l.TruncateAfter(target.Index - 1); err != nil {
			t.Fatalf("%+v: truncate after %d (before the damaged entry): %v", opts, target.Index-1, err)
		}
		cuts++
		if l.LastIndex() != target.Index-1 {
			t.Fatalf("%+v: last index %d after the cut, want %d", opts, l.LastIndex(), target.Index-1)
		}
		more := appendBatches(t, l, 5, 2, 2, 0)
		must(t, l.Sync())
		want := append(append([]Entry(nil), es[:len(es)/2]...), more...)
		if err := sameEntries(allEntries(t, l), want); err != nil {
			t.Fatalf("%+v: after the cut: %v", opts, err)
		}
		must(t, l.Close())
		l, rec := openLog(t, fsys, opts)
		if rec.Corrupt {
			t.Fatalf("%+v: reopened with damage reported: %+v", opts, rec)
		}
		if err := sameEntries(allEntries(t, l), want); err != nil {
			t.Fatalf("%+v: after a reopen: %v", opts, err)
		}
		must(t, l.Close())
	}
	if cuts == 0 {
		t.Fatal("recovery cut the damage every time: the cut was never tried")
	}
}

// A flipped bit in the header of an entry below the snapshot index, in a
// sealed segment that also holds the entries after the snapshot (its only
// index point the segment's first entry): every read of those entries
// scans across the damaged header and fails, and so did the repair's cut
// after the snapshot index (sim seed 963806 with --all-faults: the
// controller's entry 2 damaged, its snapshot at 3, every repair of entry 4
// failed for 93 s). The cut now empties the log to the snapshot point, as
// an installed snapshot does; the log then takes entries and reopens whole.
func TestTruncateAtSnapshotOverDamagedHeaderBelowIt(t *testing.T) {
	opts := Options{SegmentBytes: 2 << 10, IndexIntervalBytes: 1 << 20}
	fsys := newSim(22)
	l, _ := openLog(t, fsys, opts)
	appendBatches(t, l, 40, 2, 1, 0)
	must(t, l.Sync())
	segs := segmentNames(t, fsys)
	if len(segs) < 3 {
		t.Fatalf("want several segments, have %v", segs)
	}
	base, _, _ := parseSegmentName(segs[1])
	next, _, _ := parseSegmentName(segs[2])
	if next-base < 4 {
		t.Fatalf("segment %s holds %d entries, want 4 or more", segs[1], next-base)
	}
	damaged, snap := base+1, base+2
	snapNext := l.OffsetAfterIndex(snap)
	must(t, l.SetSnapshot(SnapshotMeta{Index: snap, Term: 1, NextOffset: snapNext, Data: []byte("state")}))
	must(t, l.Close())
	seg := path.Join("p0", segs[1])
	must(t, fsys.FlipBit(seg, lengthFieldAt(t, fsys, seg, damaged)+16, 3))

	l, rec := openLog(t, fsys, opts)
	if rec.Corrupt {
		t.Fatalf("recovery scanned the sealed segment: %+v", rec)
	}
	if _, err := l.Entries(snap+1, snap+2, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("entry %d read with %v, want ErrCorrupt (the scan crosses entry %d)", snap+1, err, damaged)
	}
	if err := l.TruncateAfter(snap); err != nil {
		t.Fatalf("truncate after the snapshot index %d: %v", snap, err)
	}
	if l.LastIndex() != snap || l.FirstIndex() != snap+1 || l.Snapshot().Index != snap {
		t.Fatalf("after the cut: first %d last %d snapshot %d, want the log empty after %d",
			l.FirstIndex(), l.LastIndex(), l.Snapshot().Index, snap)
	}
	if l.NextOffset() != snapNext || l.StartOffset() != snapNext {
		t.Fatalf("offsets [%d, %d) after the cut, want both %d (the snapshot's next offset)",
			l.StartOffset(), l.NextOffset(), snapNext)
	}
	more := appendBatches(t, l, 5, 2, 2, 0)
	must(t, l.Close())
	l, rec = openLog(t, fsys, opts)
	if rec.Corrupt || l.Snapshot().Index != snap || string(l.Snapshot().Data) != "state" {
		t.Fatalf("reopened: report %+v, snapshot %+v", rec, l.Snapshot())
	}
	if err := sameEntries(allEntries(t, l), more); err != nil {
		t.Fatalf("after a reopen: %v", err)
	}
	must(t, l.Close())
}
