package logstore

// Length-field flips told from torn writes (sim seed 914823, found with
// the controller voter-change fault): recovery_test.go has the flips of
// the active segment and the tears of the last write.

import (
	"encoding/binary"
	"path"
	"testing"
)

// A torn write is still just that: wherever the crash cut the last entry,
// recovery cuts it and reports no damage.
func TestEveryTornLastEntryIsATornWrite(t *testing.T) {
	base, es, segs := writtenBatches(t, 14, Options{}, 4, 3)
	seg := path.Join("p0", segs[0])
	data, err := base.ReadFile(seg)
	must(t, err)
	lastStart := int64(len(data)) - int64(entryHeaderBytes+len(es[len(es)-1].Data))
	for cut := lastStart + 1; cut < int64(len(data)); cut++ {
		fsys, _, _ := writtenBatches(t, 14, Options{}, 4, 3)
		must(t, fsys.TruncateFile(seg, cut))
		l, rec := openLog(t, fsys, Options{})
		if rec.Corrupt || rec.Reason == "" || l.LastIndex() != es[len(es)-2].Index {
			t.Fatalf("cut at byte %d: report %+v, last index %d", cut, rec, l.LastIndex())
		}
		must(t, l.Close())
	}
}

// The same flip with a torn write after the entry (the crash tore the next
// append): the entry is still whole, ended by the next entry's header.
func TestLengthFlipBeforeATornTailIsDamage(t *testing.T) {
	fsys := newSim(13)
	l, _ := openLog(t, fsys, Options{})
	es := appendBatches(t, l, 6, 1, 1, 0)
	must(t, l.Sync())
	tearLastWrite(t, fsys, l, 40)
	seg := path.Join("p0", segmentNames(t, fsys)[0])
	last := es[len(es)-1].Index
	must(t, fsys.FlipBit(seg, lengthFieldAt(t, fsys, seg, last)+2, 3))
	l, rec := openLog(t, fsys, Options{})
	if !rec.Corrupt || rec.HeldThrough < last || l.LastIndex() != last-1 {
		t.Fatalf("report %+v, last index %d: want damage at entry %d", rec, l.LastIndex(), last)
	}
	must(t, l.Close())
}

// A flipped bit in the length field of a sealed segment's last entry makes
// it claim more bytes than its file has: the entry after it is in the next
// segment file, so nothing in the file follows it. Recovery took that for a
// torn write: it cut the segment, deleted every later segment and reported
// no damage, so the node fenced nothing. Sim seed 914823: a replica of
// simret-0 (tiny segments) came back at 49 of the 70 entries it held and
// had acknowledged, voted for a candidate at 69, and the committed entry 70
// was overwritten. The rest of the file is the whole entry, whose CRC
// holds once its length field says so; a torn write leaves a prefix, whose
// CRC cannot. Each bit of the field is tried, with and without the
// segment's index file.
func TestLengthFlipInSealedSegmentsLastEntryIsDamage(t *testing.T) {
	for bit := 0; bit < 32; bit++ {
		for _, withIndex := range []bool{true, false} {
			opts := smallSegments
			fsys, es, segs := writtenLog(t, 11, opts, 40)
			if len(segs) < 4 {
				t.Fatalf("want several segments, have %v", segs)
			}
			seg := path.Join("p0", segs[1])
			base, _, _ := parseSegmentName(segs[2])
			at := lengthFieldAt(t, fsys, seg, base-1)
			if at == 0 {
				t.Fatalf("%s does not hold entry %d", seg, base-1)
			}
			data, err := fsys.ReadFile(seg)
			must(t, err)
			length := binary.LittleEndian.Uint32(data[at:])
			if length&(1<<bit) != 0 {
				continue // a flip to a shorter length is a CRC mismatch, tested above
			}
			must(t, fsys.FlipBit(seg, at+int64(bit/8), uint(bit%8)))
			if !withIndex {
				must(t, fsys.Remove(path.Join("p0", indexName(segs[1]))))
			}
			l, rec := openLog(t, fsys, opts)
			if !rec.Corrupt || rec.HeldThrough != es[len(es)-1].Index || l.LastIndex() != base-2 {
				t.Fatalf("bit %d, index file %v: report %+v, last index %d: want damage at entry %d holding through %d",
					bit, withIndex, rec, l.LastIndex(), base-1, es[len(es)-1].Index)
			}
			if damaged := filesEnding(t, fsys, ".damaged"); len(damaged) != len(segs)-1 {
				t.Fatalf("bit %d: %d files set aside as damaged, want %d: %v", bit, len(damaged), len(segs)-1, damaged)
			}
			must(t, l.Close())
		}
	}
}

// lengthFieldAt returns the position of the length field of the entry with
// the given index in file (0 if it holds none).
func lengthFieldAt(t *testing.T, fsys *SimFS, file string, index uint64) int64 {
	t.Helper()
	data, err := fsys.ReadFile(file)
	must(t, err)
	for pos := 0; pos+entryHeaderBytes <= len(data); {
		h, err := parseEntryHeader(data[pos:], 1<<30)
		must(t, err)
		if h.index == index {
			return int64(pos) + 8
		}
		pos += int(h.size())
	}
	return 0
}
