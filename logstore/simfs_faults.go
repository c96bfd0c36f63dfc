package logstore

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
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
//     SetLying lies on every file (the simulator's negative test: lost
//     votes and meta records break Raft). SetLyingSegments keeps the lie
//     inside the fault model of docs/testing.md: only segment files lie,
//     and what a crash loses of them either shows as damage recovery
//     finds (the segment ends below the commit index its meta record
//     holds, as the corruption fault cuts it) or is not lost (the disk
//     happened to flush it); see resolveLies.

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
	f.lieProb, f.lieSegs, f.mayLose = p, false, nil
}

// SetLyingSegments makes each Sync of a segment file ("*.log") lie with
// probability p (0: no new lies; what earlier lies left pending is still
// resolved at a crash). At a crash that loses what a lie claimed durable,
// mayLose(name) is asked, outside the FS's lock, whether the loss may
// stand (the simulator's damage budget: at most a minority of each
// group's replicas); see resolveLies.
func (f *SimFS) SetLyingSegments(p float64, mayLose func(name string) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lieProb, f.lieSegs, f.mayLose = p, true, mayLose
}

// LieFates returns how many lies crashes lost as damage (cut below the
// recorded commit) and how many they kept (made durable).
func (f *SimFS) LieFates() (lost, kept int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lieFate.lost, f.lieFate.kept
}

// lieCounts counts the fates of lied-about files at crashes.
type lieCounts struct{ lost, kept int64 }

// liedFile is a file whose lied-about writes a crash lost: honest is what
// it held when the last lying Sync returned.
type liedFile struct {
	name   string
	node   *simNode
	honest []byte
}

// resolveLies keeps a lie's loss inside the fault model, for each file a
// crash took back past what a lying Sync claimed durable. The loss may
// stand only if it can be made to show: the file, cut to a prefix of
// what it held at the lie (so no replaced entry comes back) that ends
// below the commit index of its log's meta record (meta records never
// lie), is a log recovery finds cut back and fences (the corruption
// fault's "tail cut below the recorded commit"); and only if mayLose
// agrees. Otherwise the file gets what it held at the lie, as if the
// disk had flushed it: a loss above the recorded commit is a torn write
// to every reader, and Raft cannot survive forgetting an acknowledged
// entry unawares (docs/architecture.md, "Damage to stored data").
func (f *SimFS) resolveLies(lost []liedFile) {
	for _, lf := range lost {
		f.mu.Lock()
		post := lf.node.data
		committed := f.committedPrefix(path.Dir(lf.name), lf.honest)
		common := int64(commonPrefix(post, lf.honest))
		shows := common == int64(len(post)) && common < committed
		cutMax := min(committed, common)
		f.mu.Unlock()
		keep := !shows && cutMax == 0
		if !keep {
			keep = !f.mayLose(lf.name)
		}
		f.mu.Lock()
		switch {
		case keep:
			lf.node.data = lf.honest
			f.lieFate.kept++
		case !shows:
			lf.node.data = append([]byte(nil), post[:f.rng.Int63n(cutMax)]...)
			f.lieFate.lost++
		default:
			f.lieFate.lost++
		}
		f.mu.Unlock()
	}
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
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

// lie reports whether this Sync of file name lies, counting it. Caller
// holds mu.
func (f *SimFS) lie(name string) bool {
	if f.lieProb <= 0 || (f.lieSegs && !strings.HasSuffix(name, ".log")) || f.rng.Float64() >= f.lieProb {
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
