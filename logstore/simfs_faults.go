package logstore

import (
	"fmt"
	"io/fs"
)

// Two disk faults of SimFS beside the injected errors (SetFailProb,
// FailNext), for the simulator (sim/faults_more.go):
//
//   - A full disk (SetFull): every Write and Create fails with ErrNoSpace
//     until the space frees (SetFull(false)); nothing is written. A real
//     disk fills up and frees again when an operator or retention deletes.
//   - A lying fsync (SetLying): a file Sync returns success, with
//     probability p, without making anything durable: the data stays
//     pending, as in a disk's volatile write cache that ignores flushes.
//     A later honest Sync makes it durable; a crash before that loses it.
//     No protocol survives this on a majority of its replicas; the
//     simulator puts it on at most one node (a minority of every group).

// ErrNoSpace is the error of a write to a full SimFS (ENOSPC). It wraps
// ErrInjected: the simulator injected it.
var ErrNoSpace = fmt.Errorf("%w: no space left on device", ErrInjected)

// SetFull fills the disk (writes and creates fail with ErrNoSpace) or,
// with false, frees it.
func (f *SimFS) SetFull(full bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.full = full
}

// SetLying makes each file Sync lie with probability p (0: never).
func (f *SimFS) SetLying(p float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lieProb = p
}

// Lies returns how many Syncs have lied so far.
func (f *SimFS) Lies() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lies
}

// noSpace returns the full-disk error for op on name, or nil. Caller holds
// mu.
func (f *SimFS) noSpace(op, name string) error {
	if !f.full {
		return nil
	}
	f.noSpaceHits++
	return &fs.PathError{Op: op, Path: name, Err: ErrNoSpace}
}

// lie reports whether this Sync lies, counting it. Caller holds mu.
func (f *SimFS) lie() bool {
	if f.lieProb <= 0 || f.rng.Float64() >= f.lieProb {
		return false
	}
	f.lies++
	return true
}

// Injected returns how many operations op failed by injection so far
// (FailNext, SetFailProb), and NoSpace how many writes and creates failed
// for a full disk.
func (f *SimFS) Injected(op Op) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if op == 0 || op >= opCount {
		return 0
	}
	return f.injected[op]
}

// NoSpace returns how many writes and creates failed for a full disk.
func (f *SimFS) NoSpace() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.noSpaceHits
}
