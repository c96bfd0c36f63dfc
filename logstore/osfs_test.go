package logstore

import (
	"errors"
	"io"
	"io/fs"
	"testing"
)

// TestOSFSContract checks OSFS against the FS contract (the parts a single
// process can observe; durability needs a power cut).
func TestOSFSContract(t *testing.T) {
	fsys := NewOSFS(t.TempDir())
	must(t, fsys.MkdirAll("a/b"))
	must(t, fsys.SyncDir("a"))
	f, err := fsys.Create("a/b/f")
	must(t, err)
	if _, err := fsys.Create("a/b/f"); !errors.Is(err, ErrExist) {
		t.Fatalf("create existing: %v", err)
	}
	if _, err := fsys.Open("a/b/missing"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("open missing: %v", err)
	}
	writeStr(t, f, "hello")
	writeStr(t, f, " world")
	must(t, f.Sync())
	buf := make([]byte, 20)
	n, err := f.ReadAt(buf, 6)
	if !errors.Is(err, io.EOF) || string(buf[:n]) != "world" {
		t.Fatalf("ReadAt past the end: %q, %v", buf[:n], err)
	}
	must(t, f.Truncate(5))
	writeStr(t, f, "!") // writes append at the new end
	if size, _ := f.Size(); size != 6 {
		t.Fatalf("size %d", size)
	}
	must(t, f.Close())
	if _, err := f.Write([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
	g, err := fsys.Create("a/b/g")
	must(t, err)
	must(t, g.Close())
	must(t, fsys.Rename("a/b/f", "a/b/g"))
	names, err := fsys.List("a/b")
	must(t, err)
	if len(names) != 1 || names[0] != "g" {
		t.Fatalf("list after rename: %v", names)
	}
	g, err = fsys.Open("a/b/g")
	must(t, err)
	n, _ = g.ReadAt(buf, 0)
	if string(buf[:n]) != "hello!" {
		t.Fatalf("renamed file holds %q", buf[:n])
	}
	must(t, g.Close())
	must(t, fsys.Remove("a/b/g"))
	must(t, fsys.SyncDir("a/b"))
	for _, bad := range []string{"../x", "/etc/passwd", "a/../../x"} {
		if _, err := fsys.Create(bad); err == nil || errors.Is(err, fs.ErrExist) {
			t.Fatalf("create %q escaped the root: %v", bad, err)
		}
	}
}

// TestLogOnOSFS runs the log on real files: append, roll, sync, reopen.
func TestLogOnOSFS(t *testing.T) {
	fsys := NewOSFS(t.TempDir())
	opts := Options{SegmentBytes: 4 << 10}
	l, _, err := Open(fsys, "topic-0", opts)
	must(t, err)
	want := appendBatches(t, l, 100, 5, 1, 0)
	must(t, l.TruncateAfter(90))
	want = append(want[:90], appendBatches(t, l, 5, 1, 2, 0)...)
	must(t, l.Close())
	l, rec, err := Open(fsys, "topic-0", opts)
	must(t, err)
	if rec.Reason != "" {
		t.Fatalf("reopen cut: %+v", rec)
	}
	if err := sameEntries(allEntries(t, l), want); err != nil {
		t.Fatal(err)
	}
	must(t, l.Close())
}
