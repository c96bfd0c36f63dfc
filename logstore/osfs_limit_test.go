package logstore

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
)

// TestOSFSMarksFileLimit runs the process out of descriptors (a soft
// RLIMIT_NOFILE just above what is open) and checks that OSFS says so with
// ErrFileLimit, still errors.Is EMFILE, and that a file system error of
// another kind is not marked.
func TestOSFSMarksFileLimit(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	fsys := NewOSFS(t.TempDir())
	if _, err := fsys.Open("missing"); err == nil || errors.Is(err, ErrFileLimit) {
		t.Fatalf("open of a missing file: %v, want not-exist and no file-limit mark", err)
	}
	lim := old
	lim.Cur = 64
	if lim.Cur > old.Cur {
		t.Skipf("soft limit %d already below 64", old.Cur)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	var files []File
	defer func() {
		for _, f := range files {
			f.Close()
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
			t.Errorf("restoring the descriptor limit: %v", err)
		}
	}()
	var err error
	for i := 0; i < 200; i++ {
		var f File
		if f, err = fsys.Create(fmt.Sprintf("f%d", i)); err != nil {
			break
		}
		files = append(files, f)
	}
	if !errors.Is(err, ErrFileLimit) || !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("create with no descriptor left (after %d files): %v, want ErrFileLimit and EMFILE", len(files), err)
	}
	if _, err := fsys.Open("f0"); !errors.Is(err, ErrFileLimit) {
		t.Fatalf("open with no descriptor left: %v, want ErrFileLimit", err)
	}
	if err := fsys.SyncDir("."); !errors.Is(err, ErrFileLimit) {
		t.Fatalf("sync dir with no descriptor left: %v, want ErrFileLimit", err)
	}
}
