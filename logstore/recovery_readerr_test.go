package logstore

import (
	"errors"
	"path"
	"testing"
)

// A read that fails during recovery (EIO) says nothing about the bytes:
// recovery must fail the open, not cut the segment there as if the entry
// were torn, which lost durable, committed entries (found by the
// simulator's read-error fault, seed 6 of 2026-12-01: a restarted member's
// commit went back).
func TestRecoveryReadErrorCutsNothing(t *testing.T) {
	for fails := 1; fails <= 4; fails++ {
		fsys := newSim(7)
		opts := Options{SegmentBytes: 1 << 20, IndexIntervalBytes: 256}
		l, _ := openLog(t, fsys, opts)
		want := appendBatches(t, l, 20, 2, 1, 0)
		must(t, l.Sync())
		fsys.CrashWith(CrashKeepAll) // no clean close: recovery scans the active segment
		segs := segmentNames(t, fsys)
		for range fails {
			fsys.FailNext(OpRead, path.Join("p0", segs[len(segs)-1]), nil)
		}
		if l, rec, err := Open(fsys, "p0", opts); err == nil {
			if rec.EntriesCut != 0 {
				t.Fatalf("%d failed reads: recovery cut %d entries: %+v", fails, rec.EntriesCut, rec)
			}
			_ = l.Close()
		}
		// Opening again succeeds once the queued failures are used up.
		var rec Recovery
		var err error
		for try := 0; try <= fails; try++ {
			if l, rec, err = Open(fsys, "p0", opts); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("%d failed reads: open still fails: %v", fails, err)
		}
		if rec.EntriesCut != 0 {
			t.Fatalf("%d failed reads, then a clean open: %d entries cut: %+v", fails, rec.EntriesCut, rec)
		}
		if err := sameEntries(allEntries(t, l), want); err != nil {
			t.Fatalf("%d failed reads: %v", fails, err)
		}
		must(t, l.Close())
	}
}

// A read of entries that fails (EIO) is not damage either: the error must
// not wrap ErrCorrupt, or the node's repair takes the entry for damaged and
// discards it and everything after it (the simulator with 30% of reads
// failing: the controller's commit index went back at a restart). Reading
// again returns the entries intact.
func TestEntriesReadErrorIsNotCorruption(t *testing.T) {
	fsys := newSim(7)
	l, _ := openLog(t, fsys, Options{SegmentBytes: 1 << 20, IndexIntervalBytes: 256})
	appendBatches(t, l, 20, 2, 1, 0)
	must(t, l.Sync())
	fsys.SetFailProb(OpRead, 1)
	_, err := l.Entries(1, l.LastIndex()+1, 1<<20)
	fsys.SetFailProb(OpRead, 0)
	if err == nil {
		t.Fatalf("read with every file read failing: no error")
	}
	if errors.Is(err, ErrCorrupt) {
		t.Fatalf("a failed read reported as corruption: %v", err)
	}
	es, err := l.Entries(1, l.LastIndex()+1, 1<<20)
	if err != nil || uint64(len(es)) != l.LastIndex() {
		t.Fatalf("reading again: %d entries, %v; want %d", len(es), err, l.LastIndex())
	}
}
