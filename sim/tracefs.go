package sim

import (
	"errors"

	"github.com/floe-broker/floe/logstore"
)

// tracedFS is a node's FS as the broker sees it: the node's SimFS, with
// every injected failure written to the trace, so a run's story shows
// which write or sync the nemesis failed and what the node did next.
type tracedFS struct {
	logstore.FS
	trace func(string, ...any)
}

func (t tracedFS) note(op, name string, err error) error {
	if errors.Is(err, logstore.ErrInjected) {
		t.trace("fs: %s %s failed (injected)", op, name)
	}
	return err
}

func (t tracedFS) Create(name string) (logstore.File, error) {
	f, err := t.FS.Create(name)
	if err != nil {
		return nil, t.note("create", name, err)
	}
	return &tracedFile{f, name, t}, nil
}

func (t tracedFS) Open(name string) (logstore.File, error) {
	f, err := t.FS.Open(name)
	if err != nil {
		return nil, t.note("open", name, err)
	}
	return &tracedFile{f, name, t}, nil
}

func (t tracedFS) Remove(name string) error { return t.note("remove", name, t.FS.Remove(name)) }
func (t tracedFS) Rename(from, to string) error {
	return t.note("rename", from+" -> "+to, t.FS.Rename(from, to))
}
func (t tracedFS) MkdirAll(dir string) error { return t.note("mkdir", dir, t.FS.MkdirAll(dir)) }
func (t tracedFS) SyncDir(dir string) error  { return t.note("syncdir", dir, t.FS.SyncDir(dir)) }

type tracedFile struct {
	logstore.File
	name string
	fs   tracedFS
}

func (f *tracedFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	return n, f.fs.note("write", f.name, err)
}

func (f *tracedFile) Sync() error { return f.fs.note("sync", f.name, f.File.Sync()) }
func (f *tracedFile) Truncate(size int64) error {
	return f.fs.note("truncate", f.name, f.File.Truncate(size))
}
