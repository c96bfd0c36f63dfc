package logstore

import (
	"errors"
	"fmt"
	"testing"
)

// countFS counts the files open through it.
type countFS struct {
	FS
	open int
}

type countFile struct {
	File
	fs     *countFS
	closed bool
}

func (c *countFS) Create(name string) (File, error) {
	f, err := c.FS.Create(name)
	return c.wrap(f, err)
}

func (c *countFS) Open(name string) (File, error) {
	f, err := c.FS.Open(name)
	return c.wrap(f, err)
}

func (c *countFS) wrap(f File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	c.open++
	return &countFile{File: f, fs: c}, nil
}

func (f *countFile) Close() error {
	if !f.closed {
		f.closed = true
		f.fs.open--
	}
	return f.File.Close()
}

// TestOpenLogHoldsOneFilePerSegment: an open log holds one descriptor per
// segment, none for its meta or index files, after Open, after appends and
// syncs (which write the meta record through a file opened for the round),
// and after a reopen; Close releases them all.
func TestOpenLogHoldsOneFilePerSegment(t *testing.T) {
	fsys := &countFS{FS: newSim(1)}
	opts := Options{SegmentBytes: 4 << 10, IndexIntervalBytes: 512}
	l, _ := openLog(t, fsys, opts)
	check := func(when string) {
		t.Helper()
		if segs := l.Stats().Segments; fsys.open != segs {
			t.Fatalf("%s: %d files open for %d segments", when, fsys.open, segs)
		}
	}
	check("after open")
	for term := uint64(1); term <= 5; term++ {
		appendBatches(t, l, 20, 3, term, 1000)
		l.SetHardState(HardState{Term: term, Vote: 1, Commit: l.LastIndex()})
		must(t, l.Sync())
		check(fmt.Sprintf("after sync %d", term))
	}
	if l.Stats().Segments < 3 {
		t.Fatalf("only %d segments: the test wants several", l.Stats().Segments)
	}
	must(t, l.Close())
	if fsys.open != 0 {
		t.Fatalf("%d files open after Close", fsys.open)
	}
	l, _ = openLog(t, fsys, opts)
	check("after reopen")
	if l.HardState().Term != 5 {
		t.Fatalf("reopened with hard state %+v, want term 5", l.HardState())
	}
	must(t, l.Close())
}

// TestOpenOutOfDescriptorsIsRetried: an Open that runs out of descriptors
// fails with ErrFileLimit, leaves nothing open and the log unharmed, and a
// later Open (what the node does: it retries opening later) recovers the
// whole log.
func TestOpenOutOfDescriptorsIsRetried(t *testing.T) {
	fsys := &countFS{FS: newSim(2)}
	opts := Options{SegmentBytes: 4 << 10, IndexIntervalBytes: 512}
	l, _ := openLog(t, fsys, opts)
	want := appendBatches(t, l, 60, 3, 1, 1000)
	l.SetHardState(HardState{Term: 1, Vote: 1, Commit: 60})
	must(t, l.Close())
	failed := 0
	for allowed := 0; allowed < 32; allowed++ {
		// The first allowed opens go through, then descriptors run out.
		inner := fsys.FS
		fsys.FS = &limitAfter{FS: inner, n: allowed}
		l, _, err := Open(fsys, "p0", opts)
		fsys.FS = inner
		if err == nil {
			must(t, l.Close()) // Open needed no more than allowed opens
			continue
		}
		failed++
		fail := allowed
		if !errors.Is(err, ErrFileLimit) {
			t.Fatalf("open failing at open %d: %v, want ErrFileLimit", fail, err)
		}
		if fsys.open != 0 {
			t.Fatalf("open failing at open %d left %d files open", fail, fsys.open)
		}
	}
	if failed < 3 {
		t.Fatalf("only %d opens failed: the test wants Open to run out at several points", failed)
	}
	l, rec := openLog(t, fsys, opts)
	if rec.EntriesCut != 0 || l.LastIndex() != 60 || l.HardState().Term != 1 {
		t.Fatalf("after the failed opens: last %d, hard state %+v, recovery %+v", l.LastIndex(), l.HardState(), rec)
	}
	if err := sameEntries(allEntries(t, l), want); err != nil {
		t.Fatal(err)
	}
	must(t, l.Close())
}

// limitAfter lets n opens and creates through, then fails them with
// ErrFileLimit.
type limitAfter struct {
	FS
	n int
}

func (f *limitAfter) take(name string) error {
	if f.n == 0 {
		return fmt.Errorf("open %s: too many open files (%w)", name, ErrFileLimit)
	}
	f.n--
	return nil
}

func (f *limitAfter) Create(name string) (File, error) {
	if err := f.take(name); err != nil {
		return nil, err
	}
	return f.FS.Create(name)
}

func (f *limitAfter) Open(name string) (File, error) {
	if err := f.take(name); err != nil {
		return nil, err
	}
	return f.FS.Open(name)
}
