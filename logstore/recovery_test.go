package logstore

import (
	"encoding/binary"
	"errors"
	"math/rand"
	"path"
	"strings"
	"testing"

	"github.com/floe-broker/floe/node/records"
)

// segmentNames lists the log's segment files, oldest first.
func segmentNames(t *testing.T, fsys FS) []string {
	t.Helper()
	return filesEnding(t, fsys, ".log")
}

// filesEnding lists the log's files whose names end in suffix, in name
// order.
func filesEnding(t *testing.T, fsys FS, suffix string) []string {
	t.Helper()
	names, err := fsys.List("p0")
	must(t, err)
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, suffix) {
			out = append(out, n)
		}
	}
	return out
}

// smallSegments gives a log of a few dozen batches several segments.
var smallSegments = Options{SegmentBytes: 1 << 10, IndexIntervalBytes: 128}

// writtenLog appends n batches of 2 records (term 1) to a new log on a
// simulated disk (seed) and closes it. It returns the disk, the entries
// and the log's segment files, oldest first.
func writtenLog(t *testing.T, seed int64, opts Options, n int) (*SimFS, []Entry, []string) {
	t.Helper()
	return writtenBatches(t, seed, opts, n, 2)
}

// writtenBatches is writtenLog with recsPer records a batch.
func writtenBatches(t *testing.T, seed int64, opts Options, n, recsPer int) (*SimFS, []Entry, []string) {
	t.Helper()
	fsys := newSim(seed)
	l, _ := openLog(t, fsys, opts)
	es := appendBatches(t, l, n, recsPer, 1, 0)
	must(t, l.Close())
	return fsys, es, segmentNames(t, fsys)
}

// tearLastWrite appends one batch of recs records (term 1) to l and
// crashes fsys with that write reaching the file but torn in half, its
// fsync never run.
func tearLastWrite(t *testing.T, fsys *SimFS, l *Log, recs int) {
	t.Helper()
	appendBatches(t, l, 1, recs, 1, 0)
	if l.PrepareSync() == nil {
		t.Fatal("nothing to sync")
	}
	fsys.CrashWith(CrashTornLast)
}

// flipMiddle flips one bit of the middle byte of file.
func flipMiddle(t *testing.T, fsys *SimFS, file string, bit uint) {
	t.Helper()
	data, err := fsys.ReadFile(file)
	must(t, err)
	must(t, fsys.FlipBit(file, int64(len(data)/2), bit))
}

func TestBitFlipInSealedSegmentIsDetectedOnRead(t *testing.T) {
	opts := Options{SegmentBytes: 2 << 10, IndexIntervalBytes: 256}
	fsys, want, segs := writtenLog(t, 3, opts, 60)
	if len(segs) < 3 {
		t.Fatalf("want several segments, have %v", segs)
	}
	// Flip one bit in the payload of an entry in the middle of the second
	// (sealed) segment.
	flipMiddle(t, fsys, path.Join("p0", segs[1]), 3)

	l, rec := openLog(t, fsys, opts)
	if rec.Reason != "" {
		t.Fatalf("open scanned a sealed segment with a valid index: %+v", rec)
	}
	// Reading through the damaged segment fails with ErrCorrupt naming it,
	// and never returns the damaged bytes.
	var sawCorrupt bool
	for off := l.StartOffset(); off < l.NextOffset(); off += 2 {
		res, err := l.Read(off, 1<<20, l.NextOffset())
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), segs[1]) {
				t.Fatalf("read %d: %v", off, err)
			}
			sawCorrupt = true
			continue
		}
		for b := res.Data; len(b) > 0; {
			n := int(binary.BigEndian.Uint32(b[8:])) + 12
			if _, err := records.Verify(b[:n]); err != nil {
				t.Fatalf("read %d served a bad batch: %v", off, err)
			}
			b = b[n:]
		}
	}
	if !sawCorrupt {
		t.Fatal("no read hit the flipped bit")
	}
	if _, err := l.Entries(1, l.LastIndex()+1, -1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Entries over the damage: %v, want ErrCorrupt", err)
	}
	// Entries outside the damaged segment still read.
	if _, err := l.Entries(want[0].Index, want[0].Index+1, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Entries(l.LastIndex(), l.LastIndex()+1, -1); err != nil {
		t.Fatal(err)
	}
}

func TestTornTailIsCutOnReopen(t *testing.T) {
	fsys := newSim(4)
	l, _ := openLog(t, fsys, Options{})
	synced := appendBatches(t, l, 10, 3, 1, 0)
	must(t, l.Sync())
	tearLastWrite(t, fsys, l, 50) // one big write, torn by the crash

	l, rec := openLog(t, fsys, Options{})
	if rec.Reason == "" || rec.BytesCut == 0 || rec.Corrupt {
		t.Fatalf("recovery report %+v: want a cut torn tail, not corruption", rec)
	}
	if rec.Segment == "" || rec.Position <= 0 {
		t.Fatalf("recovery report does not locate the cut: %+v", rec)
	}
	if err := sameEntries(allEntries(t, l), synced); err != nil {
		t.Fatal(err)
	}
	if l.NextOffset() != 30 || l.DurableIndex() != 10 {
		t.Fatalf("next %d durable %d", l.NextOffset(), l.DurableIndex())
	}
	// The log continues cleanly after the cut.
	more := appendBatches(t, l, 3, 1, 2, 0)
	must(t, l.Close())
	l, rec = openLog(t, fsys, Options{})
	if rec.Reason != "" {
		t.Fatalf("second reopen cut again: %+v", rec)
	}
	if err := sameEntries(allEntries(t, l), append(synced, more...)); err != nil {
		t.Fatal(err)
	}
}

func TestDamageInActiveSegmentIsReportedCorrupt(t *testing.T) {
	fsys, es, segs := writtenLog(t, 5, Options{}, 20)
	seg := path.Join("p0", segs[0])
	data, err := fsys.ReadFile(seg)
	must(t, err)
	must(t, fsys.FlipBit(seg, int64(len(data)/3), 0))
	l, rec := openLog(t, fsys, Options{})
	if !rec.Corrupt || rec.EntriesCut == 0 {
		t.Fatalf("damage followed by data must be reported as corruption: %+v", rec)
	}
	got := allEntries(t, l)
	if len(got) == 0 || len(got) >= len(es) {
		t.Fatalf("kept %d of %d entries", len(got), len(es))
	}
	if err := sameEntries(got, es[:len(got)]); err != nil {
		t.Fatal(err)
	}
	if rec.EntriesCut != len(es)-len(got) {
		t.Fatalf("EntriesCut %d, but %d entries were lost", rec.EntriesCut, len(es)-len(got))
	}
}

func TestStaleOrMissingIndexFileIsRebuilt(t *testing.T) {
	opts := smallSegments
	fsys, es, segs := writtenLog(t, 6, opts, 40)
	idx0 := path.Join("p0", indexName(segs[0]))
	idx1 := path.Join("p0", indexName(segs[1]))
	must(t, fsys.Remove(idx0))
	must(t, fsys.TruncateFile(idx1, 20))
	l, rec := openLog(t, fsys, opts)
	if rec.IndexesRebuilt != 2 || rec.Reason != "" {
		t.Fatalf("report %+v: want 2 indexes rebuilt, nothing cut", rec)
	}
	if err := sameEntries(allEntries(t, l), es); err != nil {
		t.Fatal(err)
	}
	must(t, l.Close())
	if !fsys.Exists(idx0) {
		t.Fatal("index file not rewritten")
	}
	if _, rec = openLog(t, fsys, opts); rec.IndexesRebuilt != 0 {
		t.Fatalf("rebuilt indexes did not stick: %+v", rec)
	}
}

func TestSyncFailureFailsTheLog(t *testing.T) {
	fsys := newSim(7)
	l, _ := openLog(t, fsys, Options{})
	synced := appendBatches(t, l, 5, 1, 1, 0)
	must(t, l.Sync())
	appendBatches(t, l, 5, 1, 1, 0)
	fsys.FailNext(OpSync, "", nil)
	syncFailsTheLog(t, l, "failing sync", synced, 11)
	// Nothing after the synced entries was durable.
	fsys.CrashWith(CrashLoseAll)
	l, _ = openLog(t, fsys, Options{})
	if err := sameEntries(allEntries(t, l), synced); err != nil {
		t.Fatal(err)
	}
}

func TestWriteFailureFailsTheLog(t *testing.T) {
	fsys := newSim(8)
	l, _ := openLog(t, fsys, Options{})
	es := appendBatches(t, l, 3, 1, 1, 0)
	must(t, l.Sync())
	// Appends are buffered; the failing write surfaces when the buffer is
	// written, here by the sync.
	must(t, l.Append(Entry{Index: 4, Term: 1, Kind: 9, Data: []byte("x")}))
	fsys.FailNext(OpWrite, "", nil)
	syncFailsTheLog(t, l, "failing write", es, 5)
	l, _ = openLog(t, fsys, Options{})
	if err := sameEntries(allEntries(t, l), es); err != nil {
		t.Fatal(err)
	}
}

// syncFailsTheLog checks that l's next sync, which meets the failure the
// test injected (what), fails the log: the sync answers ErrFailed,
// DurableIndex stays at the last synced entry, and an append (of index
// next) answers ErrFailed too. It closes l.
func syncFailsTheLog(t *testing.T, l *Log, what string, synced []Entry, next uint64) {
	t.Helper()
	if err := l.Sync(); !errors.Is(err, ErrFailed) {
		t.Fatalf("sync with a %s: %v, want ErrFailed", what, err)
	}
	if want := synced[len(synced)-1].Index; l.DurableIndex() != want {
		t.Fatalf("durable %d after a %s, want %d", l.DurableIndex(), what, want)
	}
	if err := l.Append(Entry{Index: next, Term: 1, Kind: 9}); !errors.Is(err, ErrFailed) {
		t.Fatalf("append after a %s: %v", what, err)
	}
	l.Close()
}

// Damage in a segment followed by more segments: recovery cuts the log at
// the damaged entry, reports every index the files held (HeldThrough, so
// the node can fence its vote up to there), and sets the cut bytes and the
// later segments aside as *.damaged files instead of deleting them.
func TestDamageBeforeLaterSegmentsReportsWhatWasHeld(t *testing.T) {
	opts := smallSegments
	fsys, es, segs := writtenLog(t, 9, opts, 60)
	if len(segs) < 4 {
		t.Fatalf("want several segments, have %v", segs)
	}
	// The second segment, without its index (so open scans it), with a
	// flipped payload byte in the middle.
	must(t, fsys.Remove(path.Join("p0", indexName(segs[1]))))
	flipMiddle(t, fsys, path.Join("p0", segs[1]), 5)
	l, rec := openLog(t, fsys, opts)
	if !rec.Corrupt || rec.HeldUnknown {
		t.Fatalf("report %+v: want corrupt, with what followed known", rec)
	}
	if rec.HeldThrough != es[len(es)-1].Index {
		t.Fatalf("HeldThrough %d, the files held up to %d", rec.HeldThrough, es[len(es)-1].Index)
	}
	if l.LastIndex() >= es[len(es)-1].Index || sameEntries(allEntries(t, l), es[:l.LastIndex()]) != nil {
		t.Fatalf("recovered %d entries", l.LastIndex())
	}
	if damaged := filesEnding(t, fsys, ".damaged"); len(damaged) != len(segs)-1 { // the cut tail of segs[1] and every later segment
		t.Fatalf("%d files set aside as damaged, want %d: %v", len(damaged), len(segs)-1, damaged)
	}
	// The loss stays reported until the node has fenced (loss.go).
	must(t, l.Close())
	l, rec = openLog(t, fsys, opts)
	if !rec.Corrupt || rec.HeldThrough != es[len(es)-1].Index {
		t.Fatalf("reopened before LossFenced: %+v, want the loss again", rec)
	}
	must(t, l.LossFenced())
	must(t, l.Close())
	// A second open finds a clean log and sets nothing else aside.
	if _, rec = openLog(t, fsys, opts); rec.Corrupt || rec.Reason != "" {
		t.Fatalf("second open: %+v", rec)
	}
}

// A flipped bit in the first entry of the first segment: the file is still
// the chain's (recovery must not take it for a stale file and delete it
// with everything after it). With its index file intact the damage is found
// when read; without, the scan cuts it as damaged, reports what the files
// held, and sets it aside.
func TestDamagedFirstEntryIsNotTakenForAStaleFile(t *testing.T) {
	for _, withIndex := range []bool{true, false} {
		opts := smallSegments
		fsys, es, segs := writtenLog(t, 10, opts, 30)
		must(t, fsys.FlipBit(path.Join("p0", segs[0]), 20, 1)) // the first entry's index field
		if !withIndex {
			must(t, fsys.Remove(path.Join("p0", indexName(segs[0]))))
		}
		l, rec := openLog(t, fsys, opts)
		if withIndex {
			if rec.Reason != "" || l.LastIndex() != es[len(es)-1].Index {
				t.Fatalf("with its index: report %+v, last index %d", rec, l.LastIndex())
			}
			if _, err := l.Entries(1, 2, -1); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("reading the damaged entry: %v", err)
			}
			continue
		}
		if !rec.Corrupt || rec.HeldThrough != es[len(es)-1].Index || l.LastIndex() != 0 {
			t.Fatalf("report %+v, last index %d: want a corrupt cut at entry 1 holding through %d", rec, l.LastIndex(), es[len(es)-1].Index)
		}
		if damaged := filesEnding(t, fsys, ".damaged"); len(damaged) != len(segs) {
			t.Fatalf("%d files set aside as damaged, want %d: %v", len(damaged), len(segs), damaged)
		}
	}
}

// Index files are derived data: a flipped bit anywhere in one makes
// recovery rebuild it from its segment, losing and cutting nothing.
func TestFlippedIndexFileIsRebuilt(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for trial := 0; trial < 100; trial++ {
		opts := smallSegments
		fsys, es, segs := writtenLog(t, int64(100+trial), opts, 40)
		idx := path.Join("p0", indexName(segs[rng.Intn(len(segs)-1)]))
		data, err := fsys.ReadFile(idx)
		must(t, err)
		off := rng.Int63n(int64(len(data)))
		must(t, fsys.FlipBit(idx, off, uint(rng.Intn(8))))
		l, rec := openLog(t, fsys, opts)
		if rec.Reason != "" || rec.IndexesRebuilt != 1 {
			t.Fatalf("trial %d: flipped byte %d of %s: report %+v", trial, off, idx, rec)
		}
		if err := sameEntries(allEntries(t, l), es); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if got := readAllBatches(t, l); len(got) != len(es) {
			t.Fatalf("trial %d: read %d batches of %d", trial, len(got), len(es))
		}
		must(t, l.Close())
	}
}

// Any one flipped bit in the synced entries of the active segment is
// reported as damage reaching the last index the file held, never taken for
// a torn write (which cuts silently and fences nothing): a whole entry that
// fails its CRC, a header that no longer parses, a length that lies. That
// includes the length field of the file's last whole entry flipped to
// claim more bytes than the file has, with or without a torn write after
// it (sim seed 197: a 56-byte control entry whose length read 32 was cut
// as a torn write, and the replica, restarted unfenced, had forgotten an
// entry it had acknowledged): recovery tries the entry with the length
// that ends it where the file or the next entry does, and its CRC holds.
func TestEveryFlipInTheActiveSegmentIsDamage(t *testing.T) {
	for _, c := range []struct {
		name      string
		batch     bool // batches, else payload-less control entries
		tornAfter bool // a torn unsynced write follows the synced entries
	}{
		{"batches", true, false},
		{"batches-then-torn-write", true, true},
		{"control", false, false},
		{"control-then-torn-write", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			build := func() (fsys *SimFS, seg string, synced int64, last uint64) {
				fsys = newSim(12)
				l, _ := openLog(t, fsys, Options{})
				for i := 0; i < 4; i++ {
					appendOne(t, l, c.batch)
				}
				must(t, l.Sync())
				last = l.LastIndex()
				seg = path.Join("p0", segmentNames(t, fsys)[0])
				data, err := fsys.ReadFile(seg)
				must(t, err)
				synced = int64(len(data))
				if !c.tornAfter {
					must(t, l.Close())
					return
				}
				appendOne(t, l, c.batch) // torn in half: a header, no whole entry
				if l.PrepareSync() == nil {
					t.Fatal("nothing to sync")
				}
				fsys.CrashWith(CrashTornLast)
				return
			}
			_, _, synced, last := build()
			lastHeader := synced - entryHeaderBytes
			if c.batch {
				lastHeader -= 100 // about the size of a one-record batch
			}
			for off := int64(0); off < synced; off++ {
				bits := []uint{0, 7}
				if off >= lastHeader {
					bits = []uint{0, 1, 2, 3, 4, 5, 6, 7} // every bit near the last entry's header
				}
				for _, bit := range bits {
					fsys, seg, _, _ := build()
					must(t, fsys.FlipBit(seg, off, bit))
					l, rec := openLog(t, fsys, Options{})
					if !rec.Corrupt || (rec.HeldThrough < last && !rec.HeldUnknown) {
						t.Fatalf("byte %d bit %d: report %+v, the file held through %d durably", off, bit, rec, last)
					}
					must(t, l.Close())
				}
			}
		})
	}
}

// A flipped length in the last entry of a sealed segment (not the
// active one): its index file no longer agrees, the scan finds an entry
// running past the end of its file, and before the fix took it for a torn
// write in the middle of the chain, deleting every later segment without
// a trace. It is damage: everything the files held is reported, and the
// later segments are set aside.
func TestFlippedLengthEndingASealedSegmentIsDamage(t *testing.T) {
	opts := smallSegments
	fsys, es, segs := writtenLog(t, 14, opts, 40)
	if len(segs) < 3 {
		t.Fatalf("want several segments, have %v", segs)
	}
	seg := path.Join("p0", segs[0])
	data, err := fsys.ReadFile(seg)
	must(t, err)
	var last int64
	for pos := int64(0); pos < int64(len(data)); {
		h, err := parseEntryHeader(data[pos:], 1<<20)
		must(t, err)
		last, pos = pos, pos+h.size()
	}
	must(t, fsys.FlipBit(seg, last+9, 2)) // length += 1024: past the end of the file
	l, rec := openLog(t, fsys, opts)
	if !rec.Corrupt || rec.HeldThrough != es[len(es)-1].Index {
		t.Fatalf("report %+v: want damage holding through %d", rec, es[len(es)-1].Index)
	}
	if damaged := filesEnding(t, fsys, ".damaged"); len(damaged) != len(segs) {
		t.Fatalf("%d files set aside as damaged, want %d: %v", len(damaged), len(segs), damaged)
	}
	must(t, l.Close())
}

// appendOne appends a batch of one record, or a control entry with no
// payload, in term 1.
func appendOne(t *testing.T, l *Log, batch bool) {
	t.Helper()
	if batch {
		appendBatches(t, l, 1, 1, 1, 0)
		return
	}
	must(t, l.Append(Entry{Index: l.LastIndex() + 1, Term: 1, Kind: 9}))
}

// A torn write is never taken for damage, wherever it ends (availability:
// when a majority crashes at once with torn tails, none of them fences its
// vote): cut anywhere inside an unsynced write of several entries, the log
// recovers to the last whole entry and reports no corruption.
func TestEveryTearOfTheLastWriteIsATear(t *testing.T) {
	for _, batch := range []bool{true, false} {
		build := func() (*SimFS, string, int64, uint64) {
			fsys := newSim(13)
			l, _ := openLog(t, fsys, Options{})
			for i := 0; i < 4; i++ {
				appendOne(t, l, batch)
			}
			must(t, l.Sync())
			seg := path.Join("p0", segmentNames(t, fsys)[0])
			data, err := fsys.ReadFile(seg)
			must(t, err)
			synced := l.LastIndex()
			for i := 0; i < 3; i++ {
				appendOne(t, l, batch)
			}
			if l.PrepareSync() == nil {
				t.Fatal("nothing to sync")
			}
			return fsys, seg, int64(len(data)), synced
		}
		fsys, seg, from, _ := build()
		full, err := fsys.ReadFile(seg)
		must(t, err)
		for cut := from; cut < int64(len(full)); cut++ {
			fsys, seg, _, synced := build()
			must(t, fsys.TruncateFile(seg, cut))
			fsys.CrashWith(CrashKeepAll)
			l, rec := openLog(t, fsys, Options{})
			if rec.Corrupt || l.LastIndex() < synced {
				t.Fatalf("batch %v, torn at byte %d: report %+v, last index %d (synced %d)", batch, cut, rec, l.LastIndex(), synced)
			}
			must(t, l.Close())
		}
	}
}

// A log whose files were cut back below its snapshot point (a disk losing
// synced writes) restarts right after the snapshot, as an install would —
// but it had entries past the snapshot too, acknowledged, and nothing on
// disk says how many: the meta record's commit index is the snapshot point
// (the record is rewritten with each snapshot). Recovery must report the
// loss as unbounded (HeldUnknown), not as a log that ends at the snapshot
// point, which the node took for whole and fenced at the snapshot only
// (sim seed 911081: a controller replica fenced at 76 voted for a
// candidate lacking entry 91, which it had acknowledged, and the entry was
// overwritten). Damage with intact entries after it still bounds the loss.
func TestLogCutBelowItsSnapshotLostAnUnknownTail(t *testing.T) {
	build := func(seed int64) (*SimFS, string, int64) {
		fsys := newSim(seed)
		l, _ := openLog(t, fsys, Options{})
		appendBatches(t, l, 10, 1, 1, 0)
		must(t, l.Sync())
		seg := path.Join("p0", segmentNames(t, fsys)[0])
		data, err := fsys.ReadFile(seg)
		must(t, err)
		tenth := int64(len(data)) // the end of entry 10
		appendBatches(t, l, 20, 1, 2, 0)
		l.SetHardState(HardState{Term: 2, Commit: 30})
		must(t, l.Sync())
		must(t, l.SetSnapshot(SnapshotMeta{Index: 30, Term: 2, NextOffset: l.OffsetAfterIndex(30)}))
		must(t, l.Sync())
		appendBatches(t, l, 10, 1, 2, 0) // 31..40: durable, acknowledged, in no record
		must(t, l.Sync())
		must(t, l.Close())
		if n := len(segmentNames(t, fsys)); n != 1 {
			t.Fatalf("%d segments, want 1", n)
		}
		return fsys, seg, tenth
	}

	fsys, seg, tenth := build(21)
	must(t, fsys.TruncateFile(seg, tenth))
	l, rec := openLog(t, fsys, Options{})
	if l.LastIndex() != 30 || l.Snapshot().Index != 30 {
		t.Fatalf("recovered last index %d, snapshot %d: want a log restarted at 30", l.LastIndex(), l.Snapshot().Index)
	}
	if !rec.Corrupt || !rec.HeldUnknown {
		t.Fatalf("a log cut to entry 10 below its snapshot at 30 (it held 40) reported %+v: want corrupt, with what it held unknown", rec)
	}
	must(t, l.Close())

	// The same log with a flipped bit in entry 5 instead: the files still
	// hold every entry after it, so they bound the loss.
	fsys, seg, tenth = build(22)
	must(t, fsys.FlipBit(seg, tenth/2, 3))
	l, rec = openLog(t, fsys, Options{})
	if l.LastIndex() != 30 || !rec.Corrupt || rec.HeldUnknown || rec.HeldThrough != 40 {
		t.Fatalf("damage in entry ~5 of a log held through 40: last index %d, report %+v: want corrupt, held through 40", l.LastIndex(), rec)
	}
	must(t, l.Close())
}
