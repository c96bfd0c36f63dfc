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
	"github.com/floe-broker/floe/node/replica"
)

// Repairing a damaged replica (a partition's, or the controller's).
//
// Every entry is checksummed, and a read that meets a bad checksum (a
// fetch, Raft reading entries to apply or to send) is refused: damaged data
// is never served. The replica is then repaired from its peers:
//
//  1. If this replica leads its group, it hands leadership to a caught-up
//     follower first (or, when it cannot send that follower a damaged
//     entry it lacks, steps down: handOverDamaged); a replica that is the
//     group's only voter has no peer to repair from and stays as it is
//     (the damaged entries stay unreadable, the data on disk stays
//     untouched, and the error is reported), since deleting data is never
//     the answer to damage.
//  2. It finds the first damaged entry and records, durably, a vote fence:
//     the last index it holds now and that entry's term.
//  3. It discards the damaged entry and everything after it and reopens
//     the replica; the leader sends the discarded entries again (or a
//     snapshot). A damaged header below the snapshot index makes the
//     first entry after the snapshot unreadable (reads scan across it);
//     the cut after the snapshot index then empties the log to the
//     snapshot point (logstore's TruncateAfter). Until the log is back past the fence the replica neither
//     votes nor campaigns (consensus/fence.go says why that keeps Raft
//     safe), and then the fence record is removed.
//
// Recovery at open can find loss too (replicas.go, recoveryFence): damaged
// entries cut from the log, or a log that ends below the commit index its
// meta record holds (a file cut back by the disk). The same fence applies.
//
// The controller's log is repaired the same way. Reopening it rebuilds the
// metadata from its snapshot and the entries it still holds, an older state
// than the one applied before; until the replica has applied past where it
// was, the broker opens what that state places here but deletes no local
// replica for missing from it (reconcile), so rewinding the metadata never
// deletes data.

// repairs is the repair state beyond one group's (whose fence and
// unrepairable flag are in its groupState).
type repairs struct {
	// ctlCatchUp, while the controller replica has applied less, holds
	// back deleting local replicas: its metadata was rewound by a repair.
	ctlCatchUp uint64
}

// fenceFile is the per-replica file holding a vote fence.
const fenceFile = "vote.fence"

// fenceUnbounded is a fence's Index when the replica cannot tell how far
// its lost entries went (a file cut back with no trace of its old end).
const fenceUnbounded = math.MaxUint64

// readFence reads a replica's vote fence; the zero fence if it has none.
// termBound stands for the term a fence without one (the older format)
// lacks: the replica's hard-state term, which no entry it held exceeds.
//
// A failed read (an I/O error, not a missing file) is returned, never
// taken for "no fence": the fence is the only record that the replica
// lost entries it may have acknowledged (or, on a replaced disk, its whole
// log), and a replica opened unfenced votes as if it still held them. Sim
// seed 953535 with --all-faults: the controller replica of a broker whose
// disk was replaced restarted, an injected read fault on its vote.fence
// opened it unfenced with the bootstrap entries only, and its vote elected
// a candidate lacking a committed entry (committed-entry-changed).
func readFence(fs logstore.FS, dir string, termBound uint64) (consensus.VoteFence, error) {
	b, ok, err := logstore.ReadFileIfExists(fs, path.Join(dir, fenceFile))
	if err != nil {
		return consensus.VoteFence{}, fmt.Errorf("read the vote fence: %w", err)
	}
	if !ok {
		return consensus.VoteFence{}, nil
	}
	r := wire.Reader{B: b}
	f := consensus.VoteFence{Index: r.U64(), Term: termBound}
	if len(b) > 8 {
		f.Term = r.U64()
	}
	if r.Done() != nil {
		// A fence that read back but does not parse is no fence: it is
		// written whole (WriteFileAtomic), so only damage to a synced
		// file makes one, and the fault model counts a damaged file
		// against the replica's group (docs/testing.md).
		return consensus.VoteFence{}, nil
	}
	return f, nil
}

// writeFence makes a fence durable before anything is discarded.
func writeFence(fs logstore.FS, dir string, f consensus.VoteFence) error {
	var w wire.Writer
	w.U64(f.Index)
	w.U64(f.Term)
	return logstore.WriteFileAtomic(fs, dir, fenceFile, w.B)
}

// logTail is what fenceOf reads of a log: a *logstore.Log being opened,
// or a replica's (replica.Replica).
type logTail interface {
	LastIndex() uint64
	Term(i uint64) (uint64, error)
	HardState() logstore.HardState
}

// entryLog is what firstDamaged reads of a replica's log.
type entryLog interface {
	FirstIndex() uint64
	LastIndex() uint64
	Entries(lo, hi uint64, maxBytes int) ([]logstore.Entry, error)
}

// fenceOf is the vote fence of a replica about to discard entries of its
// log: its last entry's index and term. (Everything the replica may have
// acknowledged is in the log; entries it discards after the fence is
// durable are counted in.)
func fenceOf(log logTail) consensus.VoteFence {
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
	return consensus.VoteFence{Index: fenceUnbounded, Term: max(f.Term, log.HardState().Term)}
}

// replicaDir is the directory of group g's local replica.
func (r *Reactor) replicaDir(g uint64) (string, bool) {
	if g == controller.ControllerGroup {
		return r.controllerDir(), true
	}
	p, ok := r.parts[g]
	if !ok {
		return "", false
	}
	return partitionDir(r.cfg.DataDir, p.Topic, p.Index, g), true
}

func (r *Reactor) controllerDir() string { return path.Join(r.cfg.DataDir, "controller") }

// repairDamaged repairs at most one damaged replica per tick.
func (r *Reactor) repairDamaged() {
	for _, g := range r.groupIDs() {
		rep := r.replicaOf(g)
		if rep == nil || !rep.Damaged() || !rep.Quiet() || rep.SyncInFlight() {
			continue
		}
		if err := r.repair(g); err != nil {
			r.env.Logf("node %d: repair group %d: %v", r.self, g, err)
		}
		return
	}
}

func (r *Reactor) repair(g uint64) error {
	rep := r.replicaOf(g)
	if len(rep.Conf().Voters) < 2 {
		if s := r.group(g); !s.unrepairable {
			s.unrepairable = true
			r.env.Logf("node %d: group %d has damaged entries and no other replica to repair from; they stay unreadable", r.self, g)
		}
		return nil
	}
	stalled := rep.Stalled()
	if rep.BasicStatus().RaftState == consensus.StateLeader && !stalled {
		return r.handOverDamaged(rep)
	}
	first, err := firstDamaged(rep)
	if err != nil {
		return err
	}
	if first == 0 {
		if stalled {
			// Raft holds a Ready the log never took: it starts again
			// from the files, which lost nothing (no fence needed).
			return r.reopen(g, nil)
		}
		rep.ClearDamaged() // the scan found nothing: a transient read error
		return nil
	}
	dir, _ := r.replicaDir(g)
	held, err := readFence(r.env.FS, dir, rep.HardState().Term)
	if err != nil {
		return err
	}
	fence := fenceOf(rep).Merge(held)
	if err := writeFence(r.env.FS, dir, fence); err != nil {
		return fmt.Errorf("writing the vote fence: %w", err)
	}
	r.env.Logf("node %d: group %d: entry %d is damaged; discarding entries %d..%d to fetch them again from the leader (vote fence %v)",
		r.self, g, first, first, rep.LastIndex(), fence)
	r.stats.Repairs++
	return r.reopen(g, func() error {
		if err := rep.Discard(first - 1); err != nil {
			return fmt.Errorf("truncating: %w", err)
		}
		return nil
	})
}

// reopen closes group g's replica, runs change on its log, and opens the
// replica again from its files (repair, and lifting a fence Raft cannot
// lift itself). The replica must not be Busy nor have a sync in flight
// (SyncInFlight: a retention step's, maintain.go). A failure to reopen
// stops the node (it can no longer tell what it holds).
func (r *Reactor) reopen(g uint64, change func() error) error {
	rep := r.replicaOf(g)
	r.host.Remove(consensus.GroupID(g))
	if g == controller.ControllerGroup {
		// The reopened controller starts from an older metadata state:
		// delete no local replica until it is back where it was.
		r.repairs.ctlCatchUp = max(r.repairs.ctlCatchUp, rep.Applied())
	}
	var t *controller.Topic
	var cp *controller.Partition
	if g != controller.ControllerGroup {
		p := r.parts[g]
		p.FailWaiters(errUnknownPartition)
		delete(r.parts, g)
		r.groupsChanged()
		r.unname(p)
		var ok bool
		if t, cp, ok = r.ctl.state.PartitionByGroup(g); !ok {
			// No longer in the metadata: reconcile would not reopen it.
			r.dropGroup(g)
			_ = rep.Close()
			return nil
		}
	}
	var cause error
	if change != nil {
		cause = change()
	}
	if err := rep.Close(); err != nil && cause == nil {
		cause = fmt.Errorf("closing: %w", err)
	}
	var err error
	if g == controller.ControllerGroup {
		err = r.openController()
	} else {
		err = r.ensurePartition(t, cp)
	}
	if err != nil {
		r.fatal(fmt.Errorf("reopening group %d: %w", g, err))
		return err
	}
	return cause
}

// liftFences removes the durable fence of every replica whose durable log
// no longer needs it.
func (r *Reactor) liftFences() {
	for _, g := range r.groupsWhere(func(s *groupState) bool { return !s.fence.IsZero() }) {
		r.liftFence(g)
	}
}

// liftFence brings group g's durable fence record up to Raft's: a lost-log
// fence becomes the leader's log end Raft learned, and the record goes once
// Raft has lifted its fence and the durable log agrees. complete runs it
// after every Ready of a fenced replica, so the record follows Raft's
// fence within the event that moved it, not a tick later: a member that
// crashed between its Raft's conversion or lift of the lost-log fence and
// the next tick came back under the lost-log fence, though its durable log
// held the leader's log end and it had acknowledged entries past it as an
// unfenced voter would. Admitting no candidate and campaigning with no
// log, it could never be repaired without a leader, and with another
// voter fenced over a loss (sim seed 1072293 with --all-faults: a freshly
// formatted controller replica crashed 7 ms after its Raft lifted the
// bootstrap lost-log fence, another lost its controller log to a lying
// fsync) the controller group elected nobody for ever.
func (r *Reactor) liftFence(g uint64) {
	s := r.local[g]
	if r.stopped || s == nil || s.fence.IsZero() {
		return
	}
	rep := r.replicaOf(g)
	dir, ok := r.replicaDir(g)
	if rep == nil || !ok {
		s.fence = consensus.VoteFence{}
		return
	}
	f := s.fence
	if lf := rep.LeaderLogFence(); f.IsLostLog() {
		if r.leaderLogFence(g, dir, lf) {
			return
		}
		f = s.fence
	} else if !lf.IsZero() && lf != f {
		// A fence of the member's term, replaced in Raft by the log
		// end of the leader of that term (consensus/fence.go
		// sameTermLeaderLog).
		r.leaderLogFence(g, dir, lf)
		f = s.fence
	}
	durable := rep.DurableIndex()
	term, err := rep.Term(durable)
	// Raft lifts its own copy of the fence (by index or by term); the
	// durable record goes once Raft has and the durable log agrees.
	if !rep.VoteFence().IsZero() || err != nil || !f.LiftedBy(durable, term) || !rep.Quiet() {
		return
	}
	if err := r.env.FS.Remove(path.Join(dir, fenceFile)); err != nil && !errors.Is(err, logstore.ErrNotExist) {
		return
	}
	if err := r.env.FS.SyncDir(dir); err != nil {
		return
	}
	s.fence = consensus.VoteFence{}
	r.env.Logf("node %d: group %d repaired: the log is back past its vote fence %v", r.self, g, f)
}

// handOverDamaged moves the leadership off a damaged leader, so that it
// can be repaired as a follower. A transfer finishes only once the leader
// has sent the transferee every entry it lacks; when one of those is
// damaged it never can (the entry is unreadable, and the leader has no
// snapshot past it to send instead). The leader then steps down, and the
// others elect a leader among themselves while it is repaired (fenced, the
// damaged entry and those after it discarded). Sim seed 990482 with
// --all-faults: a leader isolated in its term appended entries no follower
// got, crashed, a bit flipped in that tail, and after the restarts it won
// the election (the longest log); each repair started a transfer that
// could never send the damaged entry, gave up after an election timeout,
// and started it again, and the partition took no write for the 30s of
// the liveness phase.
//
// The follower needing the fewest entries is the one asked (transferOne's
// choice); its match index may be behind what it holds (just after an
// election the leader knows no follower's), and then the leader steps
// down where a transfer might have worked: one election more, no harm.
func (r *Reactor) handOverDamaged(rep *replica.Replica) error {
	status := rep.Status()
	var best *consensus.PeerProgress
	for i := range status.Progress {
		pr := &status.Progress[i]
		if pr.ID == r.self || pr.IsLearner || !pr.RecentActive {
			continue
		}
		if best == nil || pr.Match > best.Match {
			best = pr
		}
	}
	if best == nil {
		return nil // nobody to hand over to now; a later tick tries again
	}
	d, err := damagedFrom(rep, best.Match+1)
	if err != nil {
		return err
	}
	if d == 0 {
		r.transferOne(rep)
		return nil
	}
	r.env.Logf("node %d: group %d leader has damaged entry %d that member %d (match %d) still needs: stepping down to be repaired",
		r.self, rep.Group, d, best.ID, best.Match)
	rep.StepDown()
	r.queueProcess()
	return nil
}

// firstDamaged scans the log for the first entry whose checksum fails, and
// returns its index (0 if none does). It scans from the first entry after
// the snapshot: a partition log holds nothing at or below its snapshot
// (retention drops the segments it snapshots, maintain.go), so every entry
// a consumer's fetch can read is scanned here
// (TestFetchableDamageAfterRetentionIsRepaired).
func firstDamaged(log entryLog) (uint64, error) { return damagedFrom(log, 0) }

// damagedFrom is firstDamaged for the entries from index from on.
func damagedFrom(log entryLog, from uint64) (uint64, error) {
	last := log.LastIndex()
	for lo := max(from, log.FirstIndex()); lo <= last; {
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
