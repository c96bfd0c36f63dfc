package logstore

// The entry header check and zero-filled regions (issue 13): what recovery
// takes for damage (fencing the replica over what it held) and what for a
// torn write (cut silently).

import (
	"encoding/binary"
	"fmt"
	"path"
	"testing"
)

// A length damaged together with the CRC: the last entry of the active
// segment then claims more bytes than the file holds, and its CRC cannot
// be checked over any span. Before the header check recovery took it for
// a torn write and cut an entry that was durable (and may have been
// acknowledged) without a trace. The header check, which covers the
// length, says the header was written whole and changed afterwards.
func TestCRCAndLengthDamagedTogetherIsDamage(t *testing.T) {
	for _, lengthBit := range []uint{12, 16, 20, 24, 27} {
		for _, crcBit := range []uint{0, 13, 31} {
			fsys, es, segs := writtenBatches(t, 15, Options{}, 5, 2)
			seg := path.Join("p0", segs[len(segs)-1])
			last := es[len(es)-1].Index
			at := lengthFieldAt(t, fsys, seg, last)
			must(t, fsys.FlipBit(seg, at+int64(lengthBit/8), lengthBit%8))
			must(t, fsys.FlipBit(seg, at-8+int64(crcBit/8), crcBit%8))
			l, rec := openLog(t, fsys, Options{})
			if !rec.Corrupt || rec.HeldThrough < last || l.LastIndex() != last-1 {
				t.Fatalf("length bit %d, CRC bit %d: report %+v, last index %d: want damage at entry %d",
					lengthBit, crcBit, rec, l.LastIndex(), last)
			}
			must(t, l.Close())
		}
	}
}

// Files written before the header check (its bytes zero, the CRC over
// them) still read, entry for entry.
func TestEntriesWithoutHeaderCheckStillRead(t *testing.T) {
	fsys, es, segs := writtenBatches(t, 16, smallSegments, 20, 2)
	toOldFormat(t, fsys, segs)
	l, rec := openLog(t, fsys, smallSegments)
	if rec.Corrupt || rec.Reason != "" {
		t.Fatalf("report %+v: want the old-format files read whole", rec)
	}
	if err := sameEntries(allEntries(t, l), es); err != nil {
		t.Fatal(err)
	}
	must(t, l.Close())
}

// toOldFormat rewrites the log's segment files as they were written before
// the header check (its bytes zero, the CRC over them), durably, and
// removes their index files.
func toOldFormat(t *testing.T, fsys *SimFS, segs []string) {
	t.Helper()
	for _, name := range segs {
		seg := path.Join("p0", name)
		data, err := fsys.ReadFile(seg)
		must(t, err)
		old := append([]byte(nil), data...)
		for pos := 0; pos < len(old); {
			h, err := parseEntryHeader(old[pos:], 1<<30)
			must(t, err)
			e := old[pos : pos+int(h.size())]
			binary.LittleEndian.PutUint16(e[6:], 0)
			binary.LittleEndian.PutUint32(e, crc32c(e[4:]))
			pos += int(h.size())
		}
		rewriteFile(t, fsys, seg, old)
		if err := fsys.Remove(path.Join("p0", indexName(name))); err != nil && !isNotExist(err) {
			t.Fatal(err) // the active segment has none
		}
	}
}

// A length flipped upwards in the last entry of a segment, the active one
// or a sealed one, makes the entry run past the end of its file, as a torn
// write's last entry does. In a file written before the header check
// nothing in the header says it was damaged: only wholeEntryDamagedHeader
// (the CRC holds over the rest of the file once the length says so) tells
// it from a tear. With the header check the check fails first, and the
// same probe bounds the loss: the damaged entry is whole, so what follows
// it is known (HeldUnknown false). Before that probe (sim seed 197) the
// flip was cut as a torn write, and the replica restarted unfenced after
// forgetting an entry it had acknowledged.
func TestLengthFlipInLastEntryIsDamageInEitherFormat(t *testing.T) {
	for _, old := range []bool{false, true} {
		for _, sealed := range []bool{false, true} {
			t.Run(fmt.Sprintf("old=%v/sealed=%v", old, sealed), func(t *testing.T) {
				lengthFlipsInLastEntry(t, old, sealed)
			})
		}
	}
}

// lengthFlipsInLastEntry is TestLengthFlipInLastEntryIsDamageInEitherFormat
// for one format and one segment.
func lengthFlipsInLastEntry(t *testing.T, old, sealed bool) {
	for bit := 0; bit < 32; bit++ {
		fsys, es, segs := writtenLog(t, 23, smallSegments, 30)
		if len(segs) < 3 {
			t.Fatalf("want several segments, have %v", segs)
		}
		if old {
			toOldFormat(t, fsys, segs)
		}
		seg, target := path.Join("p0", segs[len(segs)-1]), es[len(es)-1].Index
		if sealed {
			next, _, _ := parseSegmentName(segs[2])
			seg, target = path.Join("p0", segs[1]), next-1
		}
		at := lengthFieldAt(t, fsys, seg, target)
		data, err := fsys.ReadFile(seg)
		must(t, err)
		if binary.LittleEndian.Uint32(data[at:])&(1<<bit) != 0 {
			continue // a shorter length fails the CRC: damage by any reading
		}
		must(t, fsys.FlipBit(seg, at+int64(bit/8), uint(bit%8)))
		l, rec := openLog(t, fsys, smallSegments)
		if !rec.Corrupt || rec.HeldUnknown || rec.HeldThrough != es[len(es)-1].Index || l.LastIndex() != target-1 {
			t.Fatalf("bit %d: report %+v, last index %d: want damage at entry %d holding through %d",
				bit, rec, l.LastIndex(), target, es[len(es)-1].Index)
		}
		must(t, l.Close())
	}
}

// The file system extended the active segment, but the data never landed:
// zeros from the last good entry to the end of the file. That is a torn
// write, never durable: cut, with no damage reported (before the fix, a
// zero region of exactly one header's length was taken for a whole entry
// with a damaged header, and fenced the replica).
func TestZeroFilledTailIsATornWrite(t *testing.T) {
	for _, n := range []int{1, 20, entryHeaderBytes, entryHeaderBytes + 1, 200, 4096} {
		for _, opts := range []Options{{}, smallSegments} {
			fsys, es, segs := writtenBatches(t, 17, opts, 12, 2)
			seg := path.Join("p0", segs[len(segs)-1])
			appendBytes(t, fsys, seg, make([]byte, n))
			l, rec := openLog(t, fsys, opts)
			if rec.Corrupt || rec.Reason == "" || rec.BytesCut != int64(n) {
				t.Fatalf("%d zeros, %d segments: report %+v: want a torn write of %d bytes", n, len(segs), rec, n)
			}
			if err := sameEntries(allEntries(t, l), es); err != nil {
				t.Fatalf("%d zeros: %v", n, err)
			}
			must(t, l.Close())
		}
	}
}

// Zeros before data are not a torn write: a tear leaves a prefix of what
// was written, never a hole before it, so the zeros hide entries that were
// there. Two whole entries zeroed in the middle of the active segment
// (the one after the first zeroed entry is gone too, so before the fix
// nothing intact was found where it should start, and the cut was taken
// for a tear); and zeros ending a sealed segment, which the log had moved
// past.
func TestZeroRegionBeforeDataIsDamage(t *testing.T) {
	t.Run("hole-in-active-segment", func(t *testing.T) {
		fsys, es, segs := writtenBatches(t, 18, Options{}, 8, 2)
		seg := path.Join("p0", segs[len(segs)-1])
		from := lengthFieldAt(t, fsys, seg, es[3].Index) - 8
		to := lengthFieldAt(t, fsys, seg, es[5].Index) - 8
		zeroBytes(t, fsys, seg, from, to)
		l, rec := openLog(t, fsys, Options{})
		last := es[len(es)-1].Index
		if !rec.Corrupt || rec.HeldThrough < last || l.LastIndex() != es[2].Index {
			t.Fatalf("report %+v, last index %d: want damage at entry %d holding through %d",
				rec, l.LastIndex(), es[3].Index, last)
		}
		must(t, l.Close())
	})
	t.Run("zero-tail-of-sealed-segment", func(t *testing.T) {
		fsys, es, segs := writtenBatches(t, 19, smallSegments, 30, 2)
		if len(segs) < 3 {
			t.Fatalf("want several segments, have %v", segs)
		}
		seg := path.Join("p0", segs[1])
		data, err := fsys.ReadFile(seg)
		must(t, err)
		base, _, _ := parseSegmentName(segs[2])
		from := lengthFieldAt(t, fsys, seg, base-1) - 8
		zeroBytes(t, fsys, seg, from, int64(len(data)))
		must(t, fsys.Remove(path.Join("p0", indexName(segs[1]))))
		l, rec := openLog(t, fsys, smallSegments)
		if !rec.Corrupt || rec.HeldThrough < es[len(es)-1].Index || l.LastIndex() != base-2 {
			t.Fatalf("report %+v, last index %d: want damage at entry %d", rec, l.LastIndex(), base-1)
		}
		must(t, l.Close())
	})
}

// appendBytes appends b to file and syncs it.
func appendBytes(t *testing.T, fsys *SimFS, file string, b []byte) {
	t.Helper()
	f, err := fsys.Open(file)
	must(t, err)
	_, err = f.Write(b)
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())
}

// rewriteFile replaces file's contents with b, durably.
func rewriteFile(t *testing.T, fsys *SimFS, file string, b []byte) {
	t.Helper()
	f, err := fsys.Open(file)
	must(t, err)
	must(t, f.Truncate(0))
	_, err = f.Write(b)
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())
}

// zeroBytes sets bytes from..to of file to zero (by flipping their set
// bits, as damage does: the file's durable state).
func zeroBytes(t *testing.T, fsys *SimFS, file string, from, to int64) {
	t.Helper()
	data, err := fsys.ReadFile(file)
	must(t, err)
	for off := from; off < to; off++ {
		for bit := uint(0); bit < 8; bit++ {
			if data[off]&(1<<bit) != 0 {
				must(t, fsys.FlipBit(file, off, bit))
			}
		}
	}
}
