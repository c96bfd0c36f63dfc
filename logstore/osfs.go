package logstore

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// OSFS is the production FS: the operating system's files under one root
// directory. Names are slash-separated and relative to the root; a name that
// would escape the root (an absolute path or one starting with "..") is
// rejected with fs.ErrInvalid.
//
// This is the only file of package logstore that may import os: the
// determinism lint exempts files named osfs*.go.
type OSFS struct {
	root string
}

// NewOSFS returns an FS rooted at root. The root itself must exist (or be
// created by the caller); MkdirAll creates directories below it.
func NewOSFS(root string) *OSFS { return &OSFS{root: root} }

var errOutsideRoot = errors.New("logstore: name escapes the FS root")

func (f *OSFS) path(name string) (string, error) {
	c := path.Clean(name)
	if path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
		return "", &os.PathError{Op: "open", Path: name, Err: errOutsideRoot}
	}
	return filepath.Join(f.root, filepath.FromSlash(c)), nil
}

// Create implements FS.
func (f *OSFS) Create(name string) (File, error) {
	p, err := f.path(name)
	if err != nil {
		return nil, err
	}
	fh, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return nil, markFileLimit(err)
	}
	return osFile{fh}, nil
}

// Open implements FS.
func (f *OSFS) Open(name string) (File, error) {
	p, err := f.path(name)
	if err != nil {
		return nil, err
	}
	fh, err := os.OpenFile(p, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, markFileLimit(err)
	}
	return osFile{fh}, nil
}

// Remove implements FS.
func (f *OSFS) Remove(name string) error {
	p, err := f.path(name)
	if err != nil {
		return err
	}
	return os.Remove(p)
}

// Rename implements FS.
func (f *OSFS) Rename(oldname, newname string) error {
	po, err := f.path(oldname)
	if err != nil {
		return err
	}
	pn, err := f.path(newname)
	if err != nil {
		return err
	}
	return os.Rename(po, pn)
}

// List implements FS. os.ReadDir returns the names sorted.
func (f *OSFS) List(dir string) ([]string, error) {
	p, err := f.path(dir)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, markFileLimit(err)
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, nil
}

// MkdirAll implements FS.
func (f *OSFS) MkdirAll(dir string) error {
	p, err := f.path(dir)
	if err != nil {
		return err
	}
	return os.MkdirAll(p, 0o755)
}

// SyncDir implements FS: it opens the directory and fsyncs it, which is what
// makes creates, renames and removes in it durable on Linux.
func (f *OSFS) SyncDir(dir string) error {
	p, err := f.path(dir)
	if err != nil {
		return err
	}
	d, err := os.Open(p)
	if err != nil {
		return markFileLimit(err)
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return serr
	}
	return cerr
}

// markFileLimit marks an error from opening a file or directory that says
// the process (EMFILE) or the system (ENFILE) has no descriptor left with
// ErrFileLimit, so that the caller can tell it from a disk failure and
// retry later; the error stays errors.Is the errno and the path error.
func markFileLimit(err error) error {
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		return fmt.Errorf("%w (%w)", err, ErrFileLimit)
	}
	return err
}

// osFile adapts *os.File to File. The file is opened with O_APPEND, so Write
// always appends; ReadAt uses pread and is safe alongside it.
type osFile struct{ f *os.File }

func (o osFile) ReadAt(p []byte, off int64) (int, error) { return o.f.ReadAt(p, off) }
func (o osFile) Write(p []byte) (int, error)             { return o.f.Write(p) }
func (o osFile) Sync() error                             { return o.f.Sync() }
func (o osFile) Truncate(size int64) error               { return o.f.Truncate(size) }
func (o osFile) Close() error                            { return o.f.Close() }

func (o osFile) Size() (int64, error) {
	st, err := o.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
