package node

import (
	"errors"
	"fmt"
	"math"
	"path"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/internal/wire"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/partition"
)

// Repairing a damaged partition replica.
//
// Every entry is checksummed, and a read that meets a bad checksum (a
// fetch, Raft reading entries to apply or to send) is refused: damaged data
// is never served. The replica is then repaired from its peers:
//
//  1. If this replica leads the partition, it hands leadership to a
//     caught-up follower first; a replica that is the group's only voter
//     has no peer to repair from and stays as it is (the damaged entries
//     stay unreadable, the data on disk stays untouched, and the error is
//     reported), since deleting data is never the answer to damage.
//  2. It finds the first damaged entry and records, durably, a vote fence:
//     the last index it holds now and that entry's term.
//  3. It discards the damaged entry and everything after it and reopens
//     the replica; the leader sends the discarded entries again (or a
//     snapshot). Until its log is back past the fence (or holds an entry
//     of a later term than the fence's) the replica votes only for
//     candidates at least as up to date as the fence, and does not
//     campaign (consensus/fence.go says why that keeps Raft safe); then
//     the fence record is removed.
//
// The controller's own log is not repaired this way: rewinding the
// metadata would make the broker drop replicas of topics the rewound
// metadata does not hold yet. A damaged controller replica is reported and
// left as it is.

// fenceFile is the per-replica file holding a vote fence: its index and
// term, 8 bytes each. (A file of 8 bytes, from before fences had a term,
// holds the index alone.)
const fenceFile = "vote.fence"

// readFence reads a replica's vote fence; the zero fence if it has none.
// termBound stands for the term a fence without one (the older format)
// lacks: the replica's hard-state term, which no entry it held exceeds.
func readFence(fs logstore.FS, dir string, termBound uint64) consensus.VoteFence {
	b, err := logstore.ReadWholeFile(fs, path.Join(dir, fenceFile))
	if err != nil {
		return consensus.VoteFence{}
	}
	r := wire.Reader{B: b}
	f := consensus.VoteFence{Index: r.U64(), Term: termBound}
	if len(b) > 8 {
		f.Term = r.U64()
	}
	if r.Done() != nil {
		// A fence that does not read back is no fence; the entries it
		// protected are fetched from the leader again anyway.
		return consensus.VoteFence{}
	}
	return f
}

// writeFence makes a fence durable before anything is discarded.
func writeFence(fs logstore.FS, dir string, f consensus.VoteFence) error {
	var w wire.Writer
	w.U64(f.Index)
	w.U64(f.Term)
	return logstore.WriteFileAtomic(fs, dir, fenceFile, w.B)
}

// fenceOf is the vote fence of a replica about to discard entries of its
// log: its last entry's index and term. (Everything the replica may have
// acknowledged is in the log; entries it discards after the fence is
// durable are counted in.)
func fenceOf(log *logstore.Log) consensus.VoteFence {
	last := log.LastIndex()
	term, err := log.Term(last)
	if err != nil {
		term = max(term, log.HardState().Term)
	}
	return consensus.VoteFence{Index: last, Term: term}
}

// fenceOfLoss is the vote fence of a replica whose log recovered shorter
// than it was, by an amount nobody knows (a truncated file takes the
// record of its own length with it): no bound on the index, and the hard
// state's term, which no entry the replica held exceeds. Such a fence
// lifts only once the log holds an entry of a later term, and meanwhile
// the replica votes only for candidates whose log does (consensus/fence.go).
func fenceOfLoss(log *logstore.Log) consensus.VoteFence {
	f := fenceOf(log)
	return consensus.VoteFence{Index: math.MaxUint64, Term: max(f.Term, log.HardState().Term)}
}

// repairDamaged repairs at most one damaged partition replica per tick.
func (r *Reactor) repairDamaged() {
	if r.ctl.rep.Damaged() && !r.ctlDamageReported {
		r.ctlDamageReported = true
		r.env.Logf("node %d: the controller log has damaged entries; they are not served, and the controller log is not repaired automatically", r.self)
	}
	for _, g := range sortedKeys(r.parts) {
		p := r.parts[g]
		rep := p.Replica()
		if !rep.Damaged() || rep.Busy() {
			continue
		}
		if err := r.repair(g, p); err != nil {
			r.env.Logf("node %d: repair %s-%d: %v", r.self, p.Topic, p.Index, err)
		}
		return
	}
}

func (r *Reactor) repair(g uint64, p *partition.Partition) error {
	rep := p.Replica()
	if len(rep.Conf().Voters) < 2 {
		if !r.unrepairable[g] {
			r.unrepairable[g] = true
			r.env.Logf("node %d: %s-%d has damaged entries and no other replica to repair from; they stay unreadable", r.self, p.Topic, p.Index)
		}
		return nil
	}
	if rep.Raft.BasicStatus().RaftState == consensus.StateLeader {
		r.transferOne(rep)
		return nil
	}
	first, err := firstDamaged(rep.Log)
	if err != nil {
		return err
	}
	if first == 0 {
		rep.ClearDamaged() // the scan found nothing: a transient read error
		return nil
	}
	_, cp, ok := r.ctl.state.PartitionByGroup(g)
	if !ok {
		return nil
	}
	t, _, _ := r.ctl.state.PartitionByGroup(g)
	dir := partitionDir(r.cfg.DataDir, p.Topic, p.Index, g)
	fence := fenceOf(rep.Log).Merge(readFence(r.env.FS, dir, rep.Log.HardState().Term))
	if err := writeFence(r.env.FS, dir, fence); err != nil {
		return fmt.Errorf("writing the vote fence: %w", err)
	}
	r.env.Logf("node %d: %s-%d: entry %d is damaged; discarding entries %d..%d to fetch them again from the leader (vote fence %d/%d)",
		r.self, p.Topic, p.Index, first, first, rep.Log.LastIndex(), fence.Term, fence.Index)
	r.stats.Repairs++
	// Drop the replica, cut its log, reopen it.
	p.FailWaiters(errUnknownPartition)
	r.host.Remove(consensus.GroupID(g))
	delete(r.parts, g)
	delete(r.byName, topicPartition{p.Topic, p.Index})
	log := rep.Log
	cut := first - 1
	if err := log.TruncateAfter(cut); err != nil {
		_ = log.Close()
		return r.reopen(t, cp, fmt.Errorf("truncating: %w", err))
	}
	if hs := log.HardState(); hs.Commit > cut {
		hs.Commit = cut
		log.SetHardState(hs)
	}
	if err := log.Close(); err != nil {
		return r.reopen(t, cp, fmt.Errorf("closing: %w", err))
	}
	return r.reopen(t, cp, nil)
}

// reopen opens a partition replica again after a repair step; a failure to
// reopen stops the node (it can no longer tell what it holds).
func (r *Reactor) reopen(t *controller.Topic, cp *controller.Partition, cause error) error {
	if err := r.ensurePartition(t, cp); err != nil {
		r.fatal(fmt.Errorf("reopening %s-%d after repair: %w", t.Name, cp.Index, err))
		return err
	}
	return cause
}

// liftFences removes the durable fence of every replica whose durable log
// no longer needs it (consensus.VoteFence.LiftedBy).
func (r *Reactor) liftFences() {
	for _, g := range sortedKeys(r.fences) {
		p, ok := r.parts[g]
		if !ok {
			delete(r.fences, g)
			continue
		}
		log := p.Replica().Log
		durable := log.DurableIndex()
		term, err := log.Term(durable)
		if !p.Replica().Raft.VoteFence().IsZero() || err != nil || !r.fences[g].LiftedBy(durable, term) {
			continue
		}
		dir := partitionDir(r.cfg.DataDir, p.Topic, p.Index, g)
		if err := r.env.FS.Remove(path.Join(dir, fenceFile)); err == nil || errors.Is(err, logstore.ErrNotExist) {
			_ = r.env.FS.SyncDir(dir)
			delete(r.fences, g)
			r.env.Logf("node %d: %s-%d repaired: the log is back past its vote fence", r.self, p.Topic, p.Index)
		}
	}
}

// firstDamaged scans the log for the first entry whose checksum fails, and
// returns its index (0 if none does).
func firstDamaged(log *logstore.Log) (uint64, error) {
	last := log.LastIndex()
	for lo := log.FirstIndex(); lo <= last; {
		es, err := log.Entries(lo, last+1, 1<<20)
		if err == nil {
			if len(es) == 0 {
				return 0, fmt.Errorf("no entries at %d", lo)
			}
			lo = es[len(es)-1].Index + 1
			continue
		}
		if !errors.Is(err, logstore.ErrCorrupt) {
			return 0, err
		}
		// Somewhere in this chunk: walk it one entry at a time.
		for i := lo; i <= last; i++ {
			if _, err := log.Entries(i, i+1, 0); err != nil {
				if errors.Is(err, logstore.ErrCorrupt) {
					return i, nil
				}
				return 0, err
			}
		}
		return 0, nil
	}
	return 0, nil
}
