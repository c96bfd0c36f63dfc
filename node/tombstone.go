package node

import (
	"fmt"
	"path"
	"slices"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/internal/wire"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/node/controller"
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
//
// The tombstone also records how far the metadata that deleted the replica
// had got: the controller replica's applied index (CtlIndex). A placement
// read from older metadata is not a new placement but the one the deletion
// already undid, seen again by a broker whose restart replays its
// controller log from a commit index older than the deletion. Such a
// placement re-creates nothing (placedByStaleView): sim seed 953843 with
// --all-faults, where n5, removed from __consumer_offsets-0 and its
// replica deleted, restarted with metadata that still placed it there,
// was re-created from its tombstone and voted a candidate two membership
// changes behind into leadership (consensus/newestconf.go). Metadata at or
// past CtlIndex that places the partition here is a reassignment after
// the deletion, and re-creates the replica as before.

// tombstone is what a deleted replica leaves behind.
type tombstone struct {
	Term, Vote          uint64 // hard state when deleted
	LastIndex, LastTerm uint64 // the log's end when deleted
	// CtlIndex is the controller replica's applied index when deleted (0
	// in a tombstone written before it was recorded).
	CtlIndex uint64
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
	w.U64(t.CtlIndex)
	return w.B
}

// readTombstone reads the tombstone of dir; ok is false if there is none.
// A tombstone that does not parse (a torn write: it is written before
// the directory goes, so the directory is still there) is none. A failed
// read is an error, not "none": a replica re-created without the
// tombstone it has would forget its term, vote and log end (the vote
// fence's failed read, repair.go readFence, is the same hole).
func readTombstone(fs logstore.FS, dir string) (tombstone, bool, error) {
	b, ok, err := logstore.ReadFileIfExists(fs, tombstonePath(dir))
	if err != nil {
		return tombstone{}, false, fmt.Errorf("read the tombstone: %w", err)
	}
	if !ok {
		return tombstone{}, false, nil
	}
	r := wire.Reader{B: b}
	t := tombstone{Term: r.U64(), Vote: r.U64(), LastIndex: r.U64(), LastTerm: r.U64()}
	if len(r.B) > 0 {
		t.CtlIndex = r.U64() // absent from tombstones of older versions
	}
	if r.Done() != nil {
		return tombstone{}, false, nil
	}
	return t, true, nil
}

// writeTombstone records rep's Raft state durably, before its directory
// is removed. The log end it records is a vote fence: the replica's own
// log end, or an older bound its log has not yet passed — the fence it
// still holds (rep.VoteFence, held: a repair's or an earlier
// tombstone's), and the earlier tombstone at dir. A replica re-created
// from a tombstone and deleted again before catching up would otherwise
// leave a tombstone of its empty log and forget the entries its first
// incarnation acknowledged (seed 200012 with --corrupt --reassign: the
// blank third incarnation voted a stale replica leader, 977 acknowledged
// writes lost).
func writeTombstone(fs logstore.FS, dir string, rep *replica.Replica, held consensus.VoteFence, ctlIndex uint64) error {
	old, ok, err := readTombstone(fs, dir)
	if err != nil {
		return err
	}
	t := nextTombstone(old, ok, rep.HardState(), fenceOf(rep), rep.VoteFence(), held)
	t.CtlIndex = max(ctlIndex, old.CtlIndex)
	return logstore.WriteFileAtomic(fs, path.Dir(dir), path.Base(tombstonePath(dir)), t.encode())
}

// nextTombstone is the tombstone of a replica with hard state hs whose log
// ends at end, still bound by fences, replacing old (if hadOld).
func nextTombstone(old tombstone, hadOld bool, hs logstore.HardState, end consensus.VoteFence, fences ...consensus.VoteFence) tombstone {
	t := tombstone{Term: hs.Term, Vote: hs.Vote}
	if hadOld {
		fences = append(fences, consensus.VoteFence{Index: old.LastIndex, Term: old.LastTerm})
		if old.Term > t.Term {
			t.Term, t.Vote = old.Term, old.Vote
		}
	}
	for _, f := range fences {
		if !f.LiftedBy(end.Index, end.Term) {
			end = end.Merge(f)
		}
	}
	t.LastIndex, t.LastTerm = end.Index, end.Term
	return t
}

// restoreTombstone gives a replica created at dir (its log new and empty)
// the Raft state its tombstone remembers: hard state term and vote, and a
// vote fence at the old log's end, both durable before Raft starts. It
// does nothing to a log that has held anything (its own state is newer).
// It returns the tombstone it restored (zero if none).
func restoreTombstone(fs logstore.FS, dir string, log *logstore.Log) (tombstone, error) {
	if log.LastIndex() != 0 || log.Snapshot().Index != 0 || log.HardState() != (logstore.HardState{}) {
		return tombstone{}, nil
	}
	t, ok, err := readTombstone(fs, dir)
	if err != nil {
		return tombstone{}, err
	}
	if !ok || t.Term == 0 {
		return tombstone{}, nil
	}
	if t.LastIndex > 0 {
		// The fence first: a hard state without it would let the replica
		// vote with an empty log in the old term.
		f := consensus.VoteFence{Index: t.LastIndex, Term: max(t.LastTerm, 1)}
		held, err := readFence(fs, dir, t.Term)
		if err != nil {
			return tombstone{}, err
		}
		if err := writeFence(fs, dir, f.Merge(held)); err != nil {
			return tombstone{}, err
		}
	}
	log.SetHardState(logstore.HardState{Term: t.Term, Vote: t.Vote})
	return t, log.Sync()
}

// removalCommitted reports whether this broker's replica of group g (doomed:
// the metadata no longer places it here) may be deleted: the partition is
// gone, or its membership change that removed this broker is committed.
// The metadata says so once the partition's leader reported the committed
// membership (Partition.Settled); the replica's own log says so when it
// has applied everything it holds and its membership lacks this broker.
// Otherwise the group may still count on this replica's log and vote (a
// reassignment that added it was replaced or cancelled before the leader
// removed it): it stays, and is asked again on the next round. The
// metadata's word counts only once it is known fresh (removalFresh).
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
		return r.removalFresh(g)
	}
	conf := rep.Conf()
	return rep.Applied() >= rep.LastIndex() &&
		!slices.Contains(conf.Voters, r.self) && !slices.Contains(conf.Learners, r.self)
}

// removalFresh reports whether the metadata that shows group g's removal
// from here settled may be trusted with the deletion of its replica: only
// once a metadata barrier (metabarrier.go) requested after the replica was
// doomed has passed, so the metadata holds every placement the controller
// committed by then, and a move that placed the partition here again
// since the removal would show (reapDoomed asks again, and
// removalCommitted reads the placement again). A broker's metadata can
// lag without bound: restarted and replaying its controller log from an
// older commit index, or cut off from the controller's leader and
// catching up. A settled removal it replays may since have been undone,
// and the replica is then a current member holding acknowledged entries.
// Sim seed 2409832 (--all-faults): n5's controller log was cut back by a
// corruption; it restarted with metadata at index 81 that showed sim-0 in
// a move from [1 2 3] to [4 2 3], neither naming n5 (unsettled, so it
// reopened its replica doomed: a voter of [3 4 5] holding the log to 578,
// committed to 567), caught up to index 101, where that move had settled
// at [3 2 4], and deleted the replica, 1 ms before it applied the moves
// that had placed sim-0 back on it. With n3's tail lost to a lying fsync
// and n4 behind the commit index, no replica held the committed entries
// 545-567: the vote fences rightly refused n4, and sim-0 never elected a
// leader again. The start's barrier alone (startFresh) would cover a
// restart, not a running broker cut off from the controller's leader that
// catches up past such a removal. A doom that the metadata undoes resets
// the request (undoom).
func (r *Reactor) removalFresh(g uint64) bool {
	s := r.group(g)
	if s.reapAsked != 0 && s.reapFresh == s.reapAsked {
		return true
	}
	if s.reapAsked == 0 {
		r.reapSeq++
		seq := r.reapSeq
		s.reapAsked = seq
		r.afterFreshMetadata(func() {
			if cur, ok := r.local[g]; ok && cur == s && s.reapAsked == seq {
				s.reapFresh = seq
				r.queueProcess()
			}
		})
	}
	return false
}

// undoom keeps group g's replica: the metadata places it here again
// before it was deleted. A later doom asks for a barrier of its own.
func (r *Reactor) undoom(g uint64) {
	delete(r.doomed, g)
	if s, ok := r.local[g]; ok {
		s.reapAsked, s.reapFresh = 0, 0
	}
}

// placedByStaleView reports whether opening the replica of p would
// re-create a deleted one from metadata older than the deletion: its
// directory holds no replica and its tombstone was written at a controller
// applied index past the current one. It returns that index, for which
// the caller waits (reconcile walks the metadata again once it is
// applied). A tombstone that cannot be read is left to ensurePartition,
// whose restore fails the same read.
func (r *Reactor) placedByStaleView(t *controller.Topic, p *controller.Partition) (uint64, bool) {
	applied := r.ctl.rep.Applied()
	tomb, ok, err := readTombstone(r.env.FS, partitionDir(r.cfg.DataDir, t.Name, p.Index, p.Group))
	if err != nil || !ok || tomb.CtlIndex <= applied || r.holdsReplica(t, p) {
		return 0, false
	}
	return tomb.CtlIndex, true
}
