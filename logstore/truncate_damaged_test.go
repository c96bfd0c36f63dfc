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
