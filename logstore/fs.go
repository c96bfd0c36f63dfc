package logstore

import (
	"errors"
	"io/fs"
)

// FS is the file system the log is written through. The production FS is the
// operating system's (OSFS); the simulator uses SimFS, which is in memory,
// crashable and can inject faults.
//
// Names are slash-separated paths. Directory semantics follow POSIX as a
// careful database sees it:
//
//   - A file's data is durable only after File.Sync returns nil.
//   - A file's existence (Create, Rename, Remove) is durable only after
//     SyncDir on its parent directory returns nil. Until then a crash may
//     undo it.
//   - After a crash, a file holds some prefix of its unsynced writes on top
//     of its synced contents; the last write may be torn (a prefix of it).
//
// Implementations are safe for concurrent use: the production runtime calls
// File.Sync on an fsync worker while the reactor keeps appending to the same
// file.
type FS interface {
	// Create makes a new empty file opened for reading and appending. It
	// fails with ErrExist if the name exists.
	Create(name string) (File, error)
	// Open opens an existing file for reading and appending (writes go to
	// the end). It fails with ErrNotExist if the name does not exist.
	Open(name string) (File, error)
	// Remove deletes a file or an empty directory.
	Remove(name string) error
	// Rename atomically replaces newname with oldname. The log only renames
	// within one directory (SimFS refuses anything else).
	Rename(oldname, newname string) error
	// List returns the names (not paths) in a directory, sorted.
	List(dir string) ([]string, error)
	// MkdirAll creates a directory and its parents. Like Create, the new
	// directories are durable only once their parents are synced.
	MkdirAll(dir string) error
	// SyncDir makes the directory's entries (creates, renames, removes)
	// durable.
	SyncDir(dir string) error
}

// File is an open file. Writes always append.
type File interface {
	// ReadAt reads len(p) bytes at off. It returns io.EOF (with n < len(p))
	// when the file ends first.
	ReadAt(p []byte, off int64) (n int, err error)
	// Write appends p at the end of the file.
	Write(p []byte) (n int, err error)
	// Sync makes every write that returned before Sync was called durable.
	Sync() error
	// Truncate cuts the file to size bytes. Like a write, it is durable
	// only after Sync.
	Truncate(size int64) error
	// Size returns the current size, synced or not.
	Size() (int64, error)
	// Close releases the file. Using a closed file returns ErrClosed.
	Close() error
}

// Errors every FS returns (wrapped or not; test with errors.Is).
var (
	ErrExist    = fs.ErrExist
	ErrNotExist = fs.ErrNotExist
	ErrClosed   = fs.ErrClosed
	// ErrInjected is returned by a simulated operation the fault injector
	// chose to fail.
	ErrInjected = errors.New("logstore: injected fault")
)
