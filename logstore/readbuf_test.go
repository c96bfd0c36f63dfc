package logstore

import (
	"bytes"
	"fmt"
	"testing"
)

// readLogFS records every ReadAt its files serve: file, offset, length.
type readLogFS struct {
	FS
	reads *[]string
}

func (f readLogFS) Create(name string) (File, error) {
	h, err := f.FS.Create(name)
	return readLogFile{h, name, f.reads}, err
}

func (f readLogFS) Open(name string) (File, error) {
	h, err := f.FS.Open(name)
	return readLogFile{h, name, f.reads}, err
}

type readLogFile struct {
	File
	name  string
	reads *[]string
}

func (h readLogFile) ReadAt(p []byte, off int64) (int, error) {
	*h.reads = append(*h.reads, fmt.Sprintf("%s@%d+%d", h.name, off, len(p)))
	return h.File.ReadAt(p, off)
}

// twoLogs opens logs "a" and "b" on one SimFS, sharing bufs, with small
// segments and batches of different sizes (so that the shared buffers
// hold the other log's bytes at every size).
func twoLogs(t *testing.T, bufs *ReadBuffers, reads *[]string) (a, b *Log, wantA, wantB []Entry) {
	t.Helper()
	fsys := readLogFS{newSim(7), reads}
	opts := Options{SegmentBytes: 8 << 10, IndexIntervalBytes: 512, ReadBuffers: bufs}
	var err error
	if a, _, err = Open(fsys, "a", opts); err != nil {
		t.Fatal(err)
	}
	if b, _, err = Open(fsys, "b", opts); err != nil {
		t.Fatal(err)
	}
	wantA = appendBatches(t, a, 120, 3, 1, 1000)
	wantB = appendBatches(t, b, 60, 20, 1, 5000)
	// An entry with an empty payload: its Data reads back nil.
	empty := Entry{Index: a.LastIndex() + 1, Term: 2, Kind: 9}
	must(t, a.Append(empty))
	wantA = append(wantA, empty)
	return a, b, wantA, wantB
}

// readMix reads l in every way the read path has, on behalf of the
// aliasing and read-pattern tests.
func readMix(t *testing.T, l *Log) {
	t.Helper()
	last := l.LastIndex()
	for lo := l.FirstIndex(); lo <= last; lo += 7 {
		if _, err := l.Entries(lo, min(lo+13, last+1), 4<<10); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Kinds(lo, last+1); err != nil {
			t.Fatal(err)
		}
	}
	for off := l.StartOffset(); off < l.NextOffset(); off += 11 {
		if _, err := l.ReadTransient(off, 3<<10, l.NextOffset()); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Read(off, 64<<10, l.NextOffset()); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := l.OffsetForTime(1000); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := l.MaxTimestamp(l.NextOffset()); err != nil {
		t.Fatal(err)
	}
}

// TestReadBuffersNeverHandedOut: what Entries, EntriesFunc and Read return
// is the caller's, never the read buffers two logs share: after both logs
// have been read every way (overwriting those buffers with other bytes),
// every result kept is still what was appended. Data of an empty payload
// is nil, as it always was.
func TestReadBuffersNeverHandedOut(t *testing.T) {
	var reads []string
	a, b, wantA, wantB := twoLogs(t, new(ReadBuffers), &reads)

	keptA := allEntries(t, a)
	var keptB []Entry
	must(t, b.EntriesFunc(b.FirstIndex(), b.LastIndex()+1, -1, func(es []Entry) {
		keptB = append(keptB, es...) // the entries copied, their Data kept
	}))
	var batchesA [][]byte
	for off := a.StartOffset(); off < a.NextOffset(); {
		res, err := a.Read(off, 2<<10, a.NextOffset())
		must(t, err)
		batchesA = append(batchesA, res.Data)
		off = res.NextOffset
	}

	readMix(t, b)
	readMix(t, a)
	readMix(t, b)

	if err := sameEntries(keptA, wantA); err != nil {
		t.Fatalf("log a's entries changed under the caller: %v", err)
	}
	if err := sameEntries(keptB, wantB); err != nil {
		t.Fatalf("log b's entries changed under the caller: %v", err)
	}
	if d := keptA[len(keptA)-1].Data; d != nil {
		t.Fatalf("an empty payload reads back as %v, want nil", d)
	}
	var joined []byte
	for _, e := range wantA[:len(wantA)-1] {
		joined = append(joined, e.Data...)
	}
	if got := bytes.Join(batchesA, nil); !bytes.Equal(got, joined) {
		t.Fatalf("log a's Read results changed under the caller (%d bytes, want %d)", len(got), len(joined))
	}
}

// TestReadTransientIsRead: ReadTransient returns what Read does (its Data
// the read buffer, valid until the next read), and Read's own Data is not
// that buffer: a ReadTransient after it leaves it alone.
func TestReadTransientIsRead(t *testing.T) {
	var reads []string
	a, b, _, _ := twoLogs(t, new(ReadBuffers), &reads)
	for off := a.StartOffset(); off < a.NextOffset(); off += 5 {
		res, err := a.Read(off, 1<<10, a.NextOffset())
		must(t, err)
		kept := bytes.Clone(res.Data)
		tr, err := a.ReadTransient(off, 1<<10, a.NextOffset())
		must(t, err)
		if !bytes.Equal(tr.Data, kept) || tr.NextOffset != res.NextOffset {
			t.Fatalf("offset %d: ReadTransient differs from Read", off)
		}
		if _, err := b.ReadTransient(0, 8<<10, b.NextOffset()); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(res.Data, kept) {
			t.Fatalf("offset %d: Read's Data is the shared read buffer", off)
		}
	}
	// At the limit: nil Data, as before the buffers.
	res, err := a.Read(a.NextOffset()-1, 1<<10, a.NextOffset()-1)
	if err != nil || res.Data != nil {
		t.Fatalf("read at the limit: %v, %v", res.Data, err)
	}
}

// TestReadBuffersKeepReads: the buffers a read goes through never change
// what it reads from the files: the same reads, in the same order, at the
// same offsets and lengths, whether the buffers are new or were left
// holding another log's bytes at other sizes. (The simulator draws a read
// fault per ReadAt: another read would change the run.)
func TestReadBuffersKeepReads(t *testing.T) {
	var fresh, dirty []string
	a1, _, _, _ := twoLogs(t, new(ReadBuffers), &fresh)
	shared := new(ReadBuffers)
	a2, b2, _, _ := twoLogs(t, shared, &dirty)
	readMix(t, b2) // fills the shared buffers
	fresh, dirty = fresh[:0], dirty[:0]

	readMix(t, a1)
	readMix(t, a2)
	if len(fresh) == 0 {
		t.Fatal("no reads recorded")
	}
	if fmt.Sprint(fresh) != fmt.Sprint(dirty) {
		t.Fatalf("reads differ: %d with fresh buffers, %d with used ones", len(fresh), len(dirty))
	}
}

// TestScannerReadsSameInAnyArray: an entry scanner reads the same calls
// through a fresh array and through a kept one of any capacity.
func TestScannerReadsSameInAnyArray(t *testing.T) {
	var reads []string
	fsys := readLogFS{newSim(3), &reads}
	l, _ := openLog(t, fsys, Options{SegmentBytes: 1 << 20})
	appendBatches(t, l, 50, 4, 1, 1000)
	must(t, l.Sync())
	s := l.segs[0]
	scan := func(keep *[]byte, pos int64, chunk int) []string {
		reads = reads[:0]
		sc := newEntryScannerIn(keep, s.f, pos, s.size, l.opts.EntryBytesMax, chunk)
		for {
			if _, _, err := sc.next(true); err != nil {
				break
			}
		}
		return append([]string(nil), reads...)
	}
	for _, chunk := range []int{0, 100, 4 << 10, 64 << 10} {
		for _, keepCap := range []int{0, 57, 5000, 1 << 20} {
			keep := bytes.Repeat([]byte{0xAB}, keepCap)
			want := scan(nil, 0, chunk)
			if got := scan(&keep, 0, chunk); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("chunk %d, kept array of %d: reads %v, want %v", chunk, keepCap, got, want)
			}
		}
	}
}
