package logstore

// Recovery's probes after a damaged entry (cutSegment): how far the loss
// went must never be understated, whether a read fails while probing or a
// second damaged entry hides the ones after it.

import (
	"path"
	"testing"
)

// A read failing while recovery looks past a damaged entry for the entries
// after it is not "nothing follows": before the fix the search gave up on
// the failed read, the loss was bounded at the damaged entry, and the
// node fenced the replica below entries it had held and acknowledged (sim
// seed 953872 on 135883d: a controller log with a header bit flipped at
// entry 7 and entries to 28 after it, fenced at {7 2}). Failing each read
// of the segment in turn: opening either fails (and a later open reports
// the loss) or reports it; either way exactly, through the last entry
// (not of unknown extent, which would fence the replica with no bound).
func TestDamageProbeReadErrorNeverBoundsTheLossLow(t *testing.T) {
	for k := 1; ; k++ {
		fsys, es, segs := writtenBatches(t, 21, Options{}, 12, 2)
		seg := path.Join("p0", segs[len(segs)-1])
		damaged, last := es[6].Index, es[len(es)-1].Index
		// Bit 3 of byte 42 of the header (lastOffsetDelta), as in the seed.
		must(t, fsys.FlipBit(seg, lengthFieldAt(t, fsys, seg, damaged)-8+42, 3))
		ffs := &failNthReadFS{SimFS: fsys, name: seg, n: k}
		l, rec, err := Open(ffs, "p0", Options{})
		if !ffs.failed {
			if err != nil {
				t.Fatalf("no read failed: open: %v", err)
			}
			must(t, l.Close())
			if k == 1 {
				t.Fatal("recovery read nothing of the segment")
			}
			return
		}
		if err != nil {
			// Nothing cut: a clean open now finds the whole loss.
			if l, rec, err = Open(fsys, "p0", Options{}); err != nil {
				t.Fatalf("read %d failed, then a clean open: %v", k, err)
			}
		}
		if !rec.Corrupt || rec.HeldThrough < last || rec.HeldUnknown || l.LastIndex() != damaged-1 {
			t.Fatalf("read %d of the segment failed: report %+v, last index %d: want damage at entry %d held through %d",
				k, rec, l.LastIndex(), damaged, last)
		}
		must(t, l.Close())
	}
}

// Two damaged entries in a row: the one after the first cannot be found
// by its index, so nothing tells how far the entries went. Before the fix
// the loss was bounded at the first damaged entry (the search came up
// empty, which was taken for "nothing follows") with intact entries after
// both; it must be reported unknown.
func TestTwoDamagedEntriesLossIsUnknown(t *testing.T) {
	fsys, es, segs := writtenBatches(t, 22, Options{}, 12, 2)
	seg := path.Join("p0", segs[len(segs)-1])
	first := es[6].Index
	at := lengthFieldAt(t, fsys, seg, first) - 8
	must(t, fsys.FlipBit(seg, at+entryHeaderBytes+3, 1))                     // payload: CRC fails
	must(t, fsys.FlipBit(seg, lengthFieldAt(t, fsys, seg, first+1)-8+42, 3)) // next header: check fails
	l, rec := openLog(t, fsys, Options{})
	if !rec.Corrupt || rec.HeldThrough < es[len(es)-1].Index && !rec.HeldUnknown || l.LastIndex() != first-1 {
		t.Fatalf("report %+v, last index %d: want damage at entry %d, held through %d or unknown",
			rec, l.LastIndex(), first, es[len(es)-1].Index)
	}
	must(t, l.Close())
}

// failNthReadFS fails the n-th read (ReadAt) of the file name, counted over
// every handle Open returns for it.
type failNthReadFS struct {
	*SimFS
	name   string
	n      int
	reads  int
	failed bool
}

func (f *failNthReadFS) Open(name string) (File, error) {
	file, err := f.SimFS.Open(name)
	if err != nil || cleanName(name) != f.name {
		return file, err
	}
	return &failNthReadFile{File: file, fs: f}, nil
}

type failNthReadFile struct {
	File
	fs *failNthReadFS
}

func (f *failNthReadFile) ReadAt(b []byte, off int64) (int, error) {
	if f.fs.reads++; f.fs.reads == f.fs.n {
		f.fs.failed = true
		return 0, ErrInjected
	}
	return f.File.ReadAt(b, off)
}
