package logstore

import (
	"testing"
	"time"

	"github.com/floe-broker/floe/node/records"
)

// slowSizeBytes is Stats().SizeBytes by definition: every segment's size,
// summed afresh.
func slowSizeBytes(l *Log) int64 {
	var n int64
	for _, s := range l.segs {
		n += s.size
	}
	return n
}

// checkSizeBytes compares the cached size with the sum, and with what the
// segment files hold once the write buffer is empty.
func checkSizeBytes(t tb, l *Log, step string) {
	t.Helper()
	got, want := l.Stats().SizeBytes, slowSizeBytes(l)
	if got != want {
		t.Fatalf("after %s: Stats().SizeBytes = %d, the segments sum to %d", step, got, want)
	}
	if len(l.wbuf) > 0 {
		return
	}
	var files int64
	for _, s := range l.segs {
		n, err := s.f.Size()
		must(t, err)
		files += n
	}
	if got != files {
		t.Fatalf("after %s: Stats().SizeBytes = %d, the segment files hold %d", step, got, files)
	}
}

// TestSizeBytesFollowsTheSegments walks a log through every change of its
// segments (append, roll, the cleaner's swaps one at a time, truncation
// inside a sealed segment, retention, a snapshot install, reopen), reading
// the size between each: a cached size that missed one of them differs
// from the sum.
func TestSizeBytesFollowsTheSegments(t *testing.T) {
	fsys := newSim(41)
	l, _, opts := buildCompactionLog(t, fsys, records.CodecNone)
	checkSizeBytes(t, l, "build")

	cfg := CleanConfig{DeleteRetentionMs: 1_000_000, BytesPerStepMax: 200}
	now := time.UnixMilli(oldTs + 2_000_000)
	swaps := l.Stats().Cleaner.SegmentsCleaned
	for done := false; !done; {
		var err error
		done, err = l.CleanStep(now, cfg, l.LastIndex()+1)
		must(t, err)
		checkSizeBytes(t, l, "a cleaner step")
	}
	if l.Stats().Cleaner.SegmentsCleaned == swaps {
		t.Fatal("the cleaner swapped no segment: the test proves nothing about swaps")
	}

	appendUntil := func(segs int, value string, check bool) {
		for len(l.segs) < segs {
			base := l.NextOffset()
			e := Entry{Index: l.LastIndex() + 1, Term: l.lastTerm, Kind: KindBatch,
				Data: makeBatch(t, base, newTs, records.CodecNone, []testRec{{key: []byte("k"), value: []byte(value)}})}
			must(t, l.Append(e))
			if check {
				checkSizeBytes(t, l, "an append")
			}
		}
	}
	appendUntil(len(l.segs)+2, "a value that fills segments", true)
	must(t, l.Sync())
	checkSizeBytes(t, l, "a sync")

	// Cut inside the second sealed segment: it becomes the active one.
	must(t, l.TruncateAfter(l.segs[1].base+1))
	checkSizeBytes(t, l, "a truncation")
	must(t, l.Sync())

	// A cut inside the last sealed segment, then appends up to as many
	// segments as before, unread in between: the same count, other sizes.
	segs := len(l.segs)
	appendUntil(segs+1, "a value that fills segments", false)
	checkSizeBytes(t, l, "a roll")
	must(t, l.TruncateAfter(l.segs[len(l.segs)-2].base+1))
	appendUntil(segs+1, "a longer value, so the segment seals at another size", false)
	checkSizeBytes(t, l, "a truncation and a roll")
	must(t, l.Sync())

	snap := l.segs[0].last
	term, err := l.Term(snap)
	must(t, err)
	must(t, l.SetSnapshot(SnapshotMeta{Index: snap, Term: term, NextOffset: l.OffsetAfterIndex(snap), Data: []byte("s")}))
	must(t, l.Sync())
	if n, err := l.ApplyRetention(now, -1, 1, l.LastIndex()+1); err != nil || n == 0 {
		t.Fatalf("retention removed %d segments, err %v; the test needs one", n, err)
	}
	checkSizeBytes(t, l, "retention")

	must(t, l.InstallSnapshot(SnapshotMeta{Index: l.LastIndex() + 5, Term: term + 1, NextOffset: l.NextOffset() + 10, Data: []byte("i")}))
	checkSizeBytes(t, l, "a snapshot install")

	must(t, l.Close())
	if got := l.Stats().SizeBytes; got != 0 {
		t.Fatalf("a closed log's size is %d", got)
	}
	l, _ = openLog(t, fsys, opts)
	checkSizeBytes(t, l, "reopen")
}
