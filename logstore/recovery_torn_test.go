package logstore

// Torn writes into zero-filled sectors (recovery_torn.go, issue 13).

import (
	"path"
	"sort"
	"testing"
)

// tornZeroLog writes 4 batches of 60 records (about 700 bytes each, so sector
// boundaries fall inside entries) and syncs them with the meta record's
// commit index at 4; then 3 more. If durable, those are synced too with
// the commit index at 7; else their write reaches the file but its sync
// never runs (a crash keeping every byte, which the test then zeroes). It
// returns the disk, the active segment, the first byte after the synced
// entries and the file's size.
func tornZeroLog(t *testing.T, durable bool) (*SimFS, string, int64, int64) {
	t.Helper()
	return tornZeroLogOf(t, durable, 60)
}

// tornZeroLogOf is tornZeroLog with firstRecs records in the first batch
// (which moves every later entry).
func tornZeroLogOf(t *testing.T, durable bool, firstRecs int) (*SimFS, string, int64, int64) {
	t.Helper()
	fsys := newSim(24)
	l, _ := openLog(t, fsys, Options{})
	appendBatches(t, l, 1, firstRecs, 1, 0)
	appendBatches(t, l, 3, 60, 1, 0)
	l.SetHardState(HardState{Term: 1, Commit: 4})
	must(t, l.Sync())
	seg := path.Join("p0", segmentNames(t, fsys)[0])
	data, err := fsys.ReadFile(seg)
	must(t, err)
	from := int64(len(data))
	appendBatches(t, l, 3, 60, 1, 0)
	if durable {
		// A new term makes the sync write the meta record (a commit
		// index alone is recorded every commitRecordEvery entries).
		l.SetHardState(HardState{Term: 2, Commit: 7})
		must(t, l.Sync())
		must(t, l.Close())
	} else {
		if l.PrepareSync() == nil {
			t.Fatal("nothing to sync")
		}
		fsys.CrashWith(CrashKeepAll)
	}
	full, err := fsys.ReadFile(seg)
	must(t, err)
	return fsys, seg, from, int64(len(full))
}

// entryStarts returns the positions where file's entries start.
func entryStarts(t *testing.T, fsys *SimFS, file string) map[int64]bool {
	t.Helper()
	data, err := fsys.ReadFile(file)
	must(t, err)
	starts := map[int64]bool{}
	for pos := 0; pos+entryHeaderBytes <= len(data); {
		h, err := parseEntryHeader(data[pos:], 1<<30)
		must(t, err)
		starts[int64(pos)] = true
		pos += int(h.size())
	}
	return starts
}

// A write torn at a sector boundary, its file size durable but the
// sectors after the boundary never written (read back as zeros): the
// entry it cut has its header, or part of it, then part of its payload,
// then zeros to the end of the file. Before the fix its CRC (or header
// check) failed with nothing intact after it and recovery took it for
// damage, fencing the replica over entries that were never durable. It is
// a tear: cut silently, every synced entry kept. Every sector boundary of
// the unsynced write is tried (those at an entry's start are the
// zero-filled tail of TestZeroFilledTailIsATornWrite).
func TestWriteTornIntoZeroedSectorsIsATear(t *testing.T) {
	_, seg0, from, full := tornZeroLog(t, false)
	tried := 0
	for b := (from/sectorBytes + 1) * sectorBytes; b < full; b += sectorBytes {
		fsys, seg, _, _ := tornZeroLog(t, false)
		zeroBytes(t, fsys, seg, b, full)
		l, rec := openLog(t, fsys, Options{})
		if rec.Corrupt || rec.Reason == "" || l.LastIndex() < 4 {
			t.Fatalf("zeros from byte %d of %s (%d bytes, synced to %d): report %+v, last index %d: want a torn write keeping entries 1-4",
				b, seg0, full, from, rec, l.LastIndex())
		}
		must(t, l.Close())
		tried++
	}
	if tried < 3 {
		t.Fatalf("only %d sector boundaries in the unsynced write", tried)
	}
}

// The tear inside the header of the first unsynced entry: zeros from a
// sector boundary the header straddles (its header check then fails, or,
// with the check's bytes zeroed, its CRC). The first batch's size moves
// the entries so that boundaries fall at several places in the header.
func TestWriteTornInsideAHeaderIsATear(t *testing.T) {
	inHeader := map[int64]bool{}
	for recs := 1; recs <= 120; recs++ {
		_, _, from, full := tornZeroLogOf(t, false, recs)
		b := (from/sectorBytes + 1) * sectorBytes
		if b-from >= entryHeaderBytes || b >= full {
			continue
		}
		fsys, seg, _, _ := tornZeroLogOf(t, false, recs)
		zeroBytes(t, fsys, seg, b, full)
		l, rec := openLog(t, fsys, Options{})
		if rec.Corrupt || rec.Reason == "" || l.LastIndex() != 4 {
			t.Fatalf("zeros from byte %d of the header at %d: report %+v, last index %d: want a torn write keeping entries 1-4",
				b-from, from, rec, l.LastIndex())
		}
		must(t, l.Close())
		inHeader[b-from] = true
	}
	if len(inHeader) < 4 {
		t.Fatalf("sector boundaries fell at only %d places in a header: %v", len(inHeader), inHeader)
	}
	t.Logf("sector boundaries at header bytes %v", sortedOffsets(inHeader))
}

func sortedOffsets(m map[int64]bool) []int64 {
	var out []int64
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// The same shape where the entries were durable is damage: in entries the
// meta record's commit index covers (they were fsynced: zeros in them are
// a lost sector), and at the end of a sealed segment (the log had moved
// past it: a tear only happens at the end of the log).
func TestZeroedSectorsInDurableEntriesAreDamage(t *testing.T) {
	t.Run("below-commit", func(t *testing.T) {
		fsys, seg, from, full := tornZeroLog(t, true)
		starts := entryStarts(t, fsys, seg)
		for b := (from/sectorBytes + 1) * sectorBytes; b < full; b += sectorBytes {
			if starts[b] {
				continue // zeros from an entry's start: the node's commit check (node/replicas.go)
			}
			fsys, seg, _, _ := tornZeroLog(t, true)
			zeroBytes(t, fsys, seg, b, full)
			l, rec := openLog(t, fsys, Options{})
			if !rec.Corrupt || (rec.HeldThrough < 7 && !rec.HeldUnknown) {
				t.Fatalf("zeros from byte %d of committed entries: report %+v, last index %d: want damage", b, rec, l.LastIndex())
			}
			must(t, l.Close())
		}
	})
	t.Run("sealed-segment", func(t *testing.T) {
		opts := Options{SegmentBytes: 2 << 10, IndexIntervalBytes: 512}
		build := func() (*SimFS, []string, []Entry) {
			fsys := newSim(25)
			l, _ := openLog(t, fsys, opts)
			es := appendBatches(t, l, 12, 60, 1, 0) // commit index 0: nothing known durable
			must(t, l.Close())
			return fsys, segmentNames(t, fsys), es
		}
		fsys, segs, es := build()
		if len(segs) < 3 {
			t.Fatalf("want several segments, have %v", segs)
		}
		seg := path.Join("p0", segs[0])
		data, err := fsys.ReadFile(seg)
		must(t, err)
		next, _, _ := parseSegmentName(segs[1])
		lastStart := lengthFieldAt(t, fsys, seg, next-1) - 8
		tried := 0
		for b := (lastStart/sectorBytes + 1) * sectorBytes; b < int64(len(data)); b += sectorBytes {
			fsys, _, _ := build()
			zeroBytes(t, fsys, seg, b, int64(len(data)))
			l, rec := openLog(t, fsys, opts)
			if !rec.Corrupt || rec.HeldThrough != es[len(es)-1].Index || l.LastIndex() != next-2 {
				t.Fatalf("zeros from byte %d ending sealed %s: report %+v, last index %d: want damage at entry %d holding through %d",
					b, seg, rec, l.LastIndex(), next-1, es[len(es)-1].Index)
			}
			must(t, l.Close())
			tried++
		}
		if tried == 0 {
			t.Fatalf("no sector boundary in the last entry of %s (from byte %d of %d)", seg, lastStart, len(data))
		}
	})
}

// zeroEndedLog writes an opaque entry 1 (synced, the meta record's commit
// index at 1) and entry 2 (synced, above the recorded commit: fsynced and
// so acknowledgeable, but nothing on disk says so), entry 2 laid out to
// end k bytes past the first sector boundary with those k bytes 0 as
// written (a Kafka batch's last byte, its last record's header count, is
// often 0). Its other bytes are 0xAB. It returns the disk and the segment.
func zeroEndedLog(t *testing.T, k int) (*SimFS, string) {
	t.Helper()
	fsys := newSim(26)
	l, _ := openLog(t, fsys, Options{})
	fill := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = 0xAB
		}
		return b
	}
	const d1 = 200
	must(t, l.Append(Entry{Index: 1, Term: 1, Data: fill(d1)}))
	l.SetHardState(HardState{Term: 1, Commit: 1})
	must(t, l.Sync())
	d2 := sectorBytes + k - 2*entryHeaderBytes - d1
	data := fill(d2)
	clear(data[d2-k:])
	must(t, l.Append(Entry{Index: 2, Term: 1, Data: data}))
	must(t, l.Sync())
	must(t, l.Close())
	seg := path.Join("p0", segmentNames(t, fsys)[0])
	b, err := fsys.ReadFile(seg)
	must(t, err)
	if len(b) != sectorBytes+k {
		t.Fatalf("segment is %d bytes, want %d", len(b), sectorBytes+k)
	}
	return fsys, seg
}

// A flipped bit in the last entry, before a sector boundary past which
// the entry's own last bytes are zeros, looks like a tear into zeroed
// sectors (a CRC that fails, zeros from a boundary inside the entry to the
// end of the file, above the recorded commit). Sim seed 1101738: n3's
// entry 6 of simtxn-1 (synced and acknowledged, the recorded commit 3)
// had bit 5 of byte 486 flipped, its one byte past 512 was 0; recovery cut
// it silently, the replica was not fenced, voted for n2 (which lacked
// entry 6), and n2 wrote another entry 6 over the committed one. But a tear
// leaves the bytes before the boundary as written: when no bytes in
// place of the zeros give the stored CRC (decidable for fewer than 4 of
// them), a byte before the boundary changed: damage.
func TestFlipBeforeZeroedEntryTailIsDamage(t *testing.T) {
	for k := 1; k <= 3; k++ {
		for _, at := range []int64{200 + 2*entryHeaderBytes, 486, sectorBytes - 1} {
			fsys, seg := zeroEndedLog(t, k)
			must(t, fsys.FlipBit(seg, at, 5))
			l, rec := openLog(t, fsys, Options{})
			if !rec.Corrupt || (rec.HeldThrough < 2 && !rec.HeldUnknown) {
				t.Fatalf("k=%d, bit flipped at byte %d: report %+v, last index %d: want damage holding through entry 2",
					k, at, rec, l.LastIndex())
			}
			must(t, l.Close())
		}
	}
}

// The same layout truly torn (the bytes past the boundary written
// non-zero but never landed: zeros) is still a tear, and an entry whose
// zero tail is 4 bytes or more cannot be told apart (some bytes always
// match the CRC): cut as a tear, as before.
func TestZeroedEntryTailStillATear(t *testing.T) {
	for k := 1; k <= 3; k++ {
		fsys := newSim(27)
		l, _ := openLog(t, fsys, Options{})
		must(t, l.Append(Entry{Index: 1, Term: 1, Data: make([]byte, 8)}))
		l.SetHardState(HardState{Term: 1, Commit: 1})
		must(t, l.Sync())
		d2 := sectorBytes + k - 2*entryHeaderBytes - 8
		data := make([]byte, d2)
		for i := range data {
			data[i] = 0xCD
		}
		must(t, l.Append(Entry{Index: 2, Term: 1, Data: data}))
		if l.PrepareSync() == nil {
			t.Fatal("nothing to sync")
		}
		fsys.CrashWith(CrashKeepAll)
		seg := path.Join("p0", segmentNames(t, fsys)[0])
		zeroBytes(t, fsys, seg, sectorBytes, int64(sectorBytes+k))
		l, rec := openLog(t, fsys, Options{})
		if rec.Corrupt || rec.Reason == "" || l.LastIndex() != 1 {
			t.Fatalf("k=%d: zeros past the boundary of an unsynced entry: report %+v, last index %d: want a tear keeping entry 1", k, rec, l.LastIndex())
		}
		must(t, l.Close())
	}
	fsys, seg := zeroEndedLog(t, 4)
	must(t, fsys.FlipBit(seg, 486, 5))
	l, rec := openLog(t, fsys, Options{})
	if rec.Corrupt || l.LastIndex() != 1 {
		t.Fatalf("4 zero bytes past the boundary: report %+v, last index %d: want the (undetectable) tear", rec, l.LastIndex())
	}
	must(t, l.Close())
}

// The corruption fault keeps to what recovery can see (SimFS.FlipTarget):
// a flip before 4 or more zero bytes of an entry above the recorded commit
// moves to the entry's last byte, and recovery finds it as damage; with
// fewer zero bytes, or below the recorded commit, the flip stays.
func TestFlipTargetAvoidsUndetectableTear(t *testing.T) {
	for k := 1; k <= 6; k++ {
		fsys, seg := zeroEndedLog(t, k)
		dir, name := path.Split(seg)
		got := fsys.FlipTarget(path.Clean(dir), name, 486)
		want := int64(486)
		if k >= 4 {
			want = int64(sectorBytes + k - 1)
		}
		if got != want {
			t.Fatalf("k=%d: flip target %d, want %d", k, got, want)
		}
		if below := fsys.FlipTarget(path.Clean(dir), name, 100); below != 100 {
			t.Fatalf("k=%d: a flip in committed entry 1 moved to %d", k, below)
		}
		must(t, fsys.FlipBit(seg, got, 5))
		l, rec := openLog(t, fsys, Options{})
		if !rec.Corrupt {
			t.Fatalf("k=%d: flip at %d: report %+v, last index %d: want damage", k, got, rec, l.LastIndex())
		}
		must(t, l.Close())
	}
}
