package node

import (
	"path"
	"slices"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/internal/wire"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/node/replica"
)

// Removed replicas. A broker deletes its replica of a partition once the
// membership change that removed it from the partition's Raft group is
// committed (removalCommitted), and keeps a tombstone of the replica's
// Raft state beside the deleted directory: its term, its vote in that term
// and the end of its log. If a later reassignment places the partition
// here again, the new replica starts from the tombstone instead of a blank
// state: at the old term with the old vote (so it never votes twice in one
// term, nor accepts a leader of a term it already left), and behind a vote
// fence at the old log end (so it votes as if it still held what it may
// have acknowledged, consensus/fence.go). Raft assumes a member never
// forgets these; a blank re-created member is a member that forgot them.

// tombstone is what a deleted replica leaves behind.
type tombstone struct {
	Term, Vote          uint64 // hard state when deleted
	LastIndex, LastTerm uint64 // the log's end when deleted
}

// tombstonePath is the tombstone file of the replica directory dir: a
// sibling file, so deleting the directory leaves it.
func tombstonePath(dir string) string { return dir + ".tomb" }

func (t tombstone) encode() []byte {
	var w wire.Writer
	w.U64(t.Term)
	w.U64(t.Vote)
	w.U64(t.LastIndex)
	w.U64(t.LastTerm)
	return w.B
}

// readTombstone reads the tombstone of dir; ok is false if there is none.
// A tombstone that does not read back (a torn write: it is written before
// the directory goes, so the directory is still there) is none.
func readTombstone(fs logstore.FS, dir string) (tombstone, bool) {
	b, err := logstore.ReadWholeFile(fs, tombstonePath(dir))
	if err != nil {
		return tombstone{}, false
	}
	r := wire.Reader{B: b}
	t := tombstone{Term: r.U64(), Vote: r.U64(), LastIndex: r.U64(), LastTerm: r.U64()}
	if r.Done() != nil {
		return tombstone{}, false
	}
	return t, true
}

// writeTombstone records rep's Raft state durably, before its directory
// is removed.
func writeTombstone(fs logstore.FS, dir string, rep *replica.Replica) error {
	hs := rep.Log.HardState()
	f := fenceOf(rep.Log)
	t := tombstone{Term: hs.Term, Vote: hs.Vote, LastIndex: f.Index, LastTerm: f.Term}
	if old, ok := readTombstone(fs, dir); ok && old.Term > t.Term {
		t = old // a replica re-created from it and deleted again at once
	}
	return logstore.WriteFileAtomic(fs, path.Dir(dir), path.Base(tombstonePath(dir)), t.encode())
}

// restoreTombstone gives a replica created at dir (its log new and empty)
// the Raft state its tombstone remembers: hard state term and vote, and a
// vote fence at the old log's end, both durable before Raft starts. It
// does nothing to a log that has held anything (its own state is newer).
func restoreTombstone(fs logstore.FS, dir string, log *logstore.Log) error {
	if log.LastIndex() != 0 || log.Snapshot().Index != 0 || log.HardState() != (logstore.HardState{}) {
		return nil
	}
	t, ok := readTombstone(fs, dir)
	if !ok || t.Term == 0 {
		return nil
	}
	if t.LastIndex > 0 {
		// The fence first: a hard state without it would let the replica
		// vote with an empty log in the old term.
		f := consensus.VoteFence{Index: t.LastIndex, Term: max(t.LastTerm, 1)}
		if err := writeFence(fs, dir, f.Merge(readFence(fs, dir, t.Term))); err != nil {
			return err
		}
	}
	log.SetHardState(logstore.HardState{Term: t.Term, Vote: t.Vote})
	return log.Sync()
}

// removalCommitted reports whether this broker's replica of group g (doomed:
// the metadata no longer places it here) may be deleted: the partition is
// gone, or its membership change that removed this broker is committed.
// The metadata says so once the partition's leader reported the committed
// membership (Partition.Settled); the replica's own log says so when it
// has applied everything it holds and its membership lacks this broker.
// Otherwise the group may still count on this replica's log and vote (a
// reassignment that added it was replaced or cancelled before the leader
// removed it): it stays, and is asked again on the next round.
func (r *Reactor) removalCommitted(g uint64, rep *replica.Replica) bool {
	_, cp, ok := r.ctl.state.PartitionByGroup(g)
	if !ok {
		return true
	}
	self := int32(r.self)
	if slices.Contains(cp.Replicas, self) || slices.Contains(cp.Target, self) {
		return false // wanted again
	}
	if cp.Settled() {
		return true
	}
	conf := rep.Conf()
	return rep.Applied() >= rep.Log.LastIndex() &&
		!slices.Contains(conf.Voters, r.self) && !slices.Contains(conf.Learners, r.self)
}
