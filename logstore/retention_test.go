package logstore

import (
	"errors"
	"testing"
	"time"
)

// retentionLog builds a log of 4 segments of 10 one-record batches each,
// segment k's batches stamped (k+1)*1000 ms, all durable, with a snapshot at
// the end of the third segment.
func retentionLog(t *testing.T, fsys *SimFS) (*Log, Options) {
	t.Helper()
	opts := Options{SegmentBytes: 1 << 20}
	l, _ := openLog(t, fsys, opts)
	for k := 0; k < 4; k++ {
		if k > 0 {
			must(t, l.roll(l.LastIndex()+1))
		}
		appendBatches(t, l, 10, 1, 1, int64(k+1)*1000)
	}
	must(t, l.Sync())
	if got := l.Stats().Segments; got != 4 {
		t.Fatalf("%d segments", got)
	}
	must(t, l.SetSnapshot(SnapshotMeta{Index: 30, Term: 1, NextOffset: 30}))
	return l, opts
}

func TestRetentionByTime(t *testing.T) {
	fsys := newSim(9)
	l, opts := retentionLog(t, fsys)
	// Batches older than 5000-2500 = 2500 ms: segments stamped 1000 and 2000.
	removed, err := l.ApplyRetention(time.UnixMilli(5000), 2500, -1, l.LastIndex()+1)
	must(t, err)
	if removed != 2 || l.StartOffset() != 20 {
		t.Fatalf("removed %d, start offset %d", removed, l.StartOffset())
	}
	if _, err := l.Read(5, 1<<20, 40); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the start offset: %v", err)
	}
	res, err := l.Read(20, 1<<20, 40)
	must(t, err)
	if res.NextOffset != 40 {
		t.Fatalf("read from the new start reached %d", res.NextOffset)
	}
	// The files stay until the meta record moving the log start is durable.
	if n := len(segmentNames(t, fsys)); n != 4 {
		t.Fatalf("%d segment files before the sync, want 4", n)
	}
	fsys.CrashWith(CrashLoseAll)
	l, _ = openLog(t, fsys, opts)
	if l.StartOffset() != 0 || l.Stats().Segments != 4 {
		t.Fatalf("crash before the sync: start %d, %d segments; want the whole log back", l.StartOffset(), l.Stats().Segments)
	}
	must(t, l.SetSnapshot(SnapshotMeta{Index: 30, Term: 1, NextOffset: 30}))
	_, err = l.ApplyRetention(time.UnixMilli(5000), 2500, -1, l.LastIndex()+1)
	must(t, err)
	must(t, l.Sync())
	if n := len(segmentNames(t, fsys)); n != 2 {
		t.Fatalf("%d segment files after the sync, want 2", n)
	}
	fsys.CrashWith(CrashLoseAll)
	l, _ = openLog(t, fsys, opts)
	if l.StartOffset() != 20 || l.Stats().Segments != 2 || l.FirstIndex() != 31 || l.LastIndex() != 40 {
		t.Fatalf("after reopen: start %d, %d segments, first %d last %d", l.StartOffset(), l.Stats().Segments, l.FirstIndex(), l.LastIndex())
	}
}

func TestRetentionBySize(t *testing.T) {
	fsys := newSim(10)
	l, _ := retentionLog(t, fsys)
	segBytes := l.segs[0].size
	total := l.Stats().SizeBytes
	// Keep at least 2.5 segments' worth: the oldest goes (3 remain, >= 2.5),
	// the second cannot (2 would remain, < 2.5).
	removed, err := l.ApplyRetention(time.UnixMilli(0), -1, total-segBytes*3/2, l.LastIndex()+1)
	must(t, err)
	if removed != 1 || l.StartOffset() != 10 {
		t.Fatalf("removed %d, start %d", removed, l.StartOffset())
	}
	if l.Stats().SizeBytes != total-segBytes {
		t.Fatalf("size %d, want %d", l.Stats().SizeBytes, total-segBytes)
	}
}

func TestRetentionLimits(t *testing.T) {
	fsys := newSim(11)
	l, _ := retentionLog(t, fsys)
	// limitIndex: nothing holding an index >= 15 goes.
	removed, err := l.ApplyRetention(time.UnixMilli(1e9), 0, -1, 15)
	must(t, err)
	if removed != 1 {
		t.Fatalf("limit 15 removed %d segments, want 1", removed)
	}
	// The snapshot covers 30: the third segment (21..30) may go, the
	// fourth (active, 31..40) never.
	removed, err = l.ApplyRetention(time.UnixMilli(1e9), 0, -1, 1000)
	must(t, err)
	if removed != 2 || l.Stats().Segments != 1 {
		t.Fatalf("removed %d, %d segments left", removed, l.Stats().Segments)
	}
	// Without a covering snapshot nothing goes.
	fsys2 := newSim(12)
	l2, _ := openLog(t, fsys2, Options{SegmentBytes: 1 << 20})
	appendBatches(t, l2, 10, 1, 1, 0)
	must(t, l2.roll(11))
	appendBatches(t, l2, 10, 1, 1, 0)
	removed, err = l2.ApplyRetention(time.UnixMilli(1e9), 0, 0, 1000)
	must(t, err)
	if removed != 0 {
		t.Fatalf("retention removed %d segments no snapshot covers", removed)
	}
}

func TestSegmentAgeRolls(t *testing.T) {
	clk := &fakeClock{}
	fsys := newSim(13)
	l, _ := openLog(t, fsys, Options{SegmentAge: time.Minute, Clock: clk})
	appendBatches(t, l, 3, 1, 1, 0)
	clk.mono += 59 * time.Second
	appendBatches(t, l, 1, 1, 1, 0)
	if n := l.Stats().Segments; n != 1 {
		t.Fatalf("%d segments before the age limit", n)
	}
	clk.mono += time.Second
	appendBatches(t, l, 1, 1, 1, 0)
	if n := l.Stats().Segments; n != 2 {
		t.Fatalf("%d segments after the age limit, want 2", n)
	}
}

// RetentionBound (added for node/maintain.go) chooses what ApplyRetention
// would drop, without needing a snapshot first.
func TestRetentionBound(t *testing.T) {
	l, _ := retentionLog(t, newSim(14))
	if got := l.RetentionBound(5000, 2500, -1, l.LastIndex()+1); got != 20 {
		t.Fatalf("by time: bound %d, want 20", got)
	}
	if got := l.RetentionBound(5000, 2500, -1, 15); got != 10 {
		t.Fatalf("by time under limit 15: bound %d, want 10", got)
	}
	if got := l.RetentionBound(0, -1, -1, l.LastIndex()+1); got != 0 {
		t.Fatalf("no retention: bound %d", got)
	}
	must(t, l.SetStartOffset(25)) // DeleteRecords: the first two segments are below it
	if got := l.RetentionBound(0, -1, -1, l.LastIndex()+1); got != 20 {
		t.Fatalf("by start offset: bound %d, want 20", got)
	}
	// The fixture's snapshot (at 30) covers the bound: drop the prefix.
	if n, err := l.CompactTo(20); err != nil || n != 2 {
		t.Fatalf("CompactTo(20) = %d, %v", n, err)
	}
}
