package replica

import (
	"errors"
	"fmt"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/internal/assert"
	"github.com/floe-broker/floe/logstore"
)

// StateMachine is the application a group replicates (a partition, the
// controller's metadata). Both methods run on the reactor.
type StateMachine interface {
	// Apply applies one committed entry, in log order, exactly once per
	// incarnation of the replica. After a restart entries after the
	// snapshot point are applied again on top of Restore's state, so Apply
	// must rebuild state, not assume it was lost.
	Apply(e consensus.Entry)
	// Restore replaces the state with the one recorded in a snapshot.
	Restore(meta consensus.SnapshotMeta, sd SnapshotData) error
}

// Replica is one Raft group on this node with its log.
//
// Invariant: at most pipeline Readys are in flight (taken, written, not
// yet completed), and they complete in the order they were taken; a Ready
// with a snapshot is in flight alone; applied <= the Raft commit index.
//
// Pipelining (issue 21). With a pipeline of K > 1, Take may collect and
// write the next Ready while earlier ones wait for their fsync, as etcd's
// raft does with AsyncStorageWrites. Nothing is acknowledged earlier for
// it: a Ready's after-persist messages (acknowledgements, votes) leave at
// its Complete, which the caller calls only once that Ready's sync
// finished, after Complete of every Ready taken before it; the leader's
// own match index advances at that Complete too (Advance, in order). The
// log makes a later plan sync everything an earlier one does
// (logstore/sync.go), so the completion of round N+1 implies N's data is
// durable, and the reactor completes rounds in order in any case.
//
// The Replica is the only owner of its Raft node and its log: nothing
// outside this package holds either, so that Take and Complete are the one
// driver of the node (api.go lists what others may ask of it).
type Replica struct {
	Group consensus.GroupID
	log   *logstore.Log
	raft  *consensus.RawNode
	sm    StateMachine

	inflight []*consensus.Ready // oldest first
	pipeline int                // how many Readys may be in flight (at least 1)
	// wantIdle: work that must run with no Ready in flight found one
	// (Quiet): no further Ready is taken while one is in flight, until a
	// Quiet call finds the replica idle.
	wantIdle bool
	// drained: a Complete emptied the pipeline that wantIdle held (Drained).
	drained bool
	applied uint64
	conf    consensus.ConfState
	storage *Storage
	// readStates are the ReadIndex answers of Readys taken since the last
	// TakeReadStates.
	readStates []consensus.ReadState

	fs  logstore.FS
	dir string
	// confIndex is the index of the configuration change the membership
	// checkpoint holds: replayed changes at or below it are already in
	// Raft's membership.
	confIndex uint64
	confDirty bool // a change was applied and not yet checkpointed
	// host is the Host the replica is registered with (Register), told of
	// every call that may give Raft new work (changed).
	host *consensus.Host
	// stalled: a Ready taken from Raft could not be written because the
	// log is damaged where it had to be cut (ErrDamagedWrite). Raft now
	// believes in a log the disk does not hold: no further Ready is
	// taken, nothing more this Raft says is sent, and the node reopens
	// the replica from its files (node/repair.go).
	stalled bool
}

// ErrDamagedWrite is Take's error when a Ready's entries could not be
// written because the log must be cut (Raft replacing a follower's
// conflicting suffix) across a damaged entry: the cut needs the end of
// the last entry kept, and a damaged header at or below it hides where
// that is. Nothing of the Ready was written, its messages were dropped,
// and the replica is Stalled and Damaged: the node repairs it from its
// peers (fenced, the damaged entry and everything after it discarded)
// instead of stopping. Before, the broker stopped for good (sim seed
// 1903863 with --all-faults: a bit flipped in the header of a follower's
// entry 11, in a sealed segment, and a new leader's append that replaced
// entries 12.. made every start of the broker fail).
var ErrDamagedWrite = errors.New("the log is damaged where the write must cut it")

// Stalled reports whether a Ready could not be written (ErrDamagedWrite):
// the replica must be reopened from its files before Raft is driven again.
func (r *Replica) Stalled() bool { return r.stalled }

// Config is what New needs besides the log.
type Config struct {
	Group consensus.GroupID
	Raft  consensus.Config // Storage and Applied are filled in by New
	// FS and Dir locate the replica's membership checkpoint
	// (confcheckpoint.go); with a nil FS there is none.
	FS  logstore.FS
	Dir string
	// Pipeline is how many Readys may be in flight at once (0 or 1: one,
	// the Ready/Complete lockstep; at most logstore.PlansInFlightMax).
	Pipeline int
}

// New starts a replica on an open log: it restores the state machine from
// the log's snapshot point and starts Raft, which will hand every committed
// entry after that point to Apply again.
func New(cfg Config, log *logstore.Log, sm StateMachine) (*Replica, error) {
	st := NewStorage(log)
	snap, err := st.Snapshot()
	if err != nil {
		return nil, err
	}
	sd, err := DecodeSnapshotData(snap.Data)
	if err != nil {
		return nil, err
	}
	if err := sm.Restore(snap.Meta, sd); err != nil {
		return nil, fmt.Errorf("replica %d: restore: %w", cfg.Group, err)
	}
	rc := cfg.Raft
	rc.Storage = st
	rep := &Replica{Group: cfg.Group, log: log, sm: sm, applied: snap.Meta.Index, conf: sd.Conf, storage: st,
		fs: cfg.FS, dir: cfg.Dir, pipeline: max(cfg.Pipeline, 1)}
	if cfg.FS != nil {
		c, ok, err := readConfCheckpoint(cfg.FS, cfg.Dir)
		if err != nil {
			return nil, fmt.Errorf("replica %d: %w", cfg.Group, err)
		}
		if ok && c.Index > snap.Meta.Index {
			// A later membership than the snapshot's: Raft starts with it,
			// and replay does not apply the changes it already holds.
			st.confOverride = &c.Conf
			rep.conf, rep.confIndex = c.Conf, c.Index
		}
	}
	rc.Applied = snap.Meta.Index
	rn, err := consensus.NewRawNode(rc)
	if err != nil {
		return nil, fmt.Errorf("replica %d: %w", cfg.Group, err)
	}
	rn.SetPipeline(rep.pipeline)
	rep.raft = rn
	return rep, nil
}

// Applied returns the index of the last applied entry.
func (r *Replica) Applied() uint64 { return r.applied }

// Conf returns the membership as of the last applied entry.
func (r *Replica) Conf() consensus.ConfState { return r.conf }

// Busy reports whether a Ready is in flight.
func (r *Replica) Busy() bool { return len(r.inflight) > 0 }

// InFlight returns how many Readys are in flight.
func (r *Replica) InFlight() int { return len(r.inflight) }

// Quiet reports whether no Ready is in flight, for work that must run
// between Readys (retention, compaction, snapshots, repair). When one is,
// it also stops the pipeline (one Ready in flight at a time, as without
// pipelining) until it is drained (Drained), so that such work is not put
// off for ever by a replica that always has a round in flight.
func (r *Replica) Quiet() bool {
	if r.Busy() {
		r.wantIdle = true
		return false
	}
	if r.wantIdle {
		r.wantIdle = false
		r.changed()
	}
	return true
}

// Drained reports, once, that a Complete emptied the pipeline a Quiet call
// had stopped: the caller runs the work that waited for the replica to be
// idle now, before the next Take (the pipeline runs again after it).
func (r *Replica) Drained() bool {
	d := r.drained
	r.drained = false
	return d
}

// HasWork reports whether Take would return a Ready.
func (r *Replica) HasWork() bool { return r.canTake() && r.raft.HasReady() }

// canTake reports whether another Ready may be taken now: fewer than the
// pipeline's are in flight, and, with one in flight, neither it nor the
// next one carries a snapshot (a snapshot install replaces the log and
// the state machine: it is ordered alone) and nobody waits for the
// replica to be quiet. A Stalled replica takes none.
func (r *Replica) canTake() bool {
	if r.stalled { // Raft holds a Ready the log never took
		return false
	}
	n := len(r.inflight)
	if n == 0 {
		return true
	}
	if n >= r.pipeline || r.wantIdle || r.raft.HasPendingSnapshot() {
		return false
	}
	for _, rd := range r.inflight {
		if !rd.Snapshot.IsEmpty() {
			return false
		}
	}
	return true
}

// Take collects the next Ready and writes its persistent part to the log
// (not synced). It returns the messages that may be sent at once and
// whether the write needs an fsync before Complete. The caller sends
// messages, syncs if asked, and then calls Complete. With a pipeline,
// Take may be called again before Complete (HasWork says when); the
// caller then completes the Readys in the order they were taken, each
// only once its own sync (which covers the earlier ones) finished.
func (r *Replica) Take() (sendNow []consensus.Message, mustSync bool, err error) {
	if !r.canTake() {
		return nil, false, fmt.Errorf("replica %d: %d Readys already in flight", r.Group, len(r.inflight))
	}
	r.changed()
	rd := r.raft.Ready()
	if err := r.write(&rd); err != nil {
		return nil, false, err
	}
	r.inflight = append(r.inflight, &rd)
	r.readStates = append(r.readStates, rd.ReadStates...)
	if err := r.applyDurable(&rd); err != nil {
		return nil, false, err
	}
	return rd.Messages, rd.MustSync || !rd.Snapshot.IsEmpty() || len(rd.Entries) > 0, nil
}

// applyDurable applies the Ready's committed entries that are already
// durable in this log, without waiting for the Ready's own fsync. A
// committed entry can never be truncated, so once it is also on this disk
// applying it early is as safe as applying it at Complete. On a leader
// every committed entry is (commit counts the leader's own durable match),
// so an acks=all answer waits for the fsync that made it durable and not
// also for the next one, which carries whatever arrived meanwhile. A
// follower may commit entries this very Ready writes; those wait. So may
// entries an earlier Ready in flight holds: application stays in index
// order (an entry after a gap waits for the Complete that fills it).
func (r *Replica) applyDurable(rd *consensus.Ready) error {
	if !rd.Snapshot.IsEmpty() {
		return nil
	}
	durable := r.log.DurableIndex()
	for _, e := range rd.CommittedEntries {
		if e.Index > durable || e.Index > r.applied+1 {
			return nil
		}
		if e.Index <= r.applied {
			continue
		}
		if e.Type == consensus.EntryConfChange {
			if err := r.applyConfChange(e); err != nil {
				return err
			}
		}
		r.sm.Apply(e)
		r.applied = e.Index
	}
	r.checkApplied()
	return r.saveConf()
}

// ApplyCommittedBusy applies, on a leader whose Ready is still in flight,
// the entries Raft has learned are committed since it was taken (a quorum
// of followers acknowledged them) and that are durable in this log.
// Without it they wait for the in-flight Ready's fsync round to end and
// for the next Ready, although nothing about them depends on that round:
// an acks=all answer at RF=3 then waits for a second leader fsync round
// after the quorum had the entry (issue 21, docs/benchmarks.md). It
// applies in index order from the applied index, and stops before a
// configuration change (applied the regular way, at Take or Complete),
// at an entry whose term in the log is not Raft's at that index, and at
// anything it cannot read; the Ready's own CommittedEntries, at Complete
// or at the next Take, skip what it applied. It reports whether it
// applied anything.
func (r *Replica) ApplyCommittedBusy() bool {
	if len(r.inflight) == 0 {
		return false
	}
	for _, rd := range r.inflight {
		if !rd.Snapshot.IsEmpty() {
			return false
		}
	}
	st := r.raft.BasicStatus()
	if st.RaftState != consensus.StateLeader {
		return false
	}
	hi := min(st.Commit, r.log.DurableIndex())
	if hi <= r.applied {
		return false
	}
	ents, err := r.storage.Entries(r.applied+1, hi+1, busyApplyBytesMax)
	if err != nil {
		return false
	}
	applied := false
	for _, e := range ents {
		if e.Index != r.applied+1 || e.Type == consensus.EntryConfChange {
			break
		}
		if t, err := r.raft.TermAt(e.Index); err != nil || t != e.Term {
			break
		}
		r.sm.Apply(e)
		r.applied = e.Index
		applied = true
	}
	r.checkApplied()
	return applied
}

// busyApplyBytesMax bounds what one ApplyCommittedBusy reads.
const busyApplyBytesMax = 8 << 20

// checkApplied asserts the invariant applied <= Raft's commit index.
func (r *Replica) checkApplied() {
	if !assert.Enabled() {
		return
	}
	if commit := r.raft.BasicStatus().Commit; r.applied > commit {
		assert.Failf("replica %d: applied %d past the commit index %d", r.Group, r.applied, commit)
	}
}

func (r *Replica) write(rd *consensus.Ready) error {
	if !rd.Snapshot.IsEmpty() {
		sd, err := DecodeSnapshotData(rd.Snapshot.Data)
		if err != nil {
			return fmt.Errorf("replica %d: snapshot: %w", r.Group, err)
		}
		m := logstore.SnapshotMeta{Index: rd.Snapshot.Meta.Index, Term: rd.Snapshot.Meta.Term,
			NextOffset: sd.NextOffset, Data: rd.Snapshot.Data}
		if err := r.log.InstallSnapshot(m); err != nil {
			return fmt.Errorf("replica %d: install snapshot: %w", r.Group, err)
		}
		r.storage.cache.reset()
	}
	if len(rd.Entries) > 0 {
		first := rd.Entries[0].Index
		if first <= r.log.LastIndex() {
			if err := r.log.TruncateAfter(first - 1); err != nil {
				if errors.Is(err, logstore.ErrCorrupt) {
					// The cut crosses a damaged entry header (at or
					// below first-1): nothing was written, and this
					// Ready never will be. The replica stops until
					// the node repairs it (Stalled).
					r.storage.damaged, r.stalled = true, true
					return fmt.Errorf("replica %d: truncate after %d: %w: %w", r.Group, first-1, ErrDamagedWrite, err)
				}
				return fmt.Errorf("replica %d: truncate after %d: %w", r.Group, first-1, err)
			}
		}
		les := make([]logstore.Entry, len(rd.Entries))
		for i, e := range rd.Entries {
			les[i] = ToLog(e)
		}
		if err := r.log.Append(les...); err != nil {
			r.storage.cache.reset()
			return fmt.Errorf("replica %d: append: %w", r.Group, err)
		}
		r.storage.cache.add(rd.Entries)
	}
	if rd.HardState != (consensus.HardState{}) {
		hs := rd.HardState
		r.log.SetHardState(logstore.HardState{Term: hs.Term, Vote: hs.Vote, Commit: hs.Commit})
	}
	return nil
}

// Complete finishes the oldest in-flight Ready once its write is durable
// (and so every write before it): it restores a received snapshot, applies
// committed entries, advances Raft, and returns the messages that had to
// wait for the persist.
func (r *Replica) Complete() (sendAfter []consensus.Message, err error) {
	if len(r.inflight) == 0 {
		return nil, nil
	}
	rd := r.inflight[0]
	r.changed()
	r.inflight[0] = nil
	r.inflight = r.inflight[1:]
	if len(r.inflight) == 0 {
		r.inflight = nil
		if r.wantIdle {
			r.wantIdle, r.drained = false, true
		}
	}
	if !rd.Snapshot.IsEmpty() && rd.Snapshot.Meta.Index > r.applied {
		sd, err := DecodeSnapshotData(rd.Snapshot.Data)
		if err != nil {
			return nil, err
		}
		if err := r.sm.Restore(rd.Snapshot.Meta, sd); err != nil {
			return nil, fmt.Errorf("replica %d: restore: %w", r.Group, err)
		}
		r.applied = rd.Snapshot.Meta.Index
		r.restoreConf(rd.Snapshot.Meta)
	}
	for _, e := range rd.CommittedEntries {
		if e.Index <= r.applied {
			continue
		}
		if e.Type == consensus.EntryConfChange {
			if err := r.applyConfChange(e); err != nil {
				return nil, err
			}
		}
		r.sm.Apply(e)
		r.applied = e.Index
	}
	r.checkApplied()
	if err := r.saveConf(); err != nil {
		return nil, err
	}
	r.raft.Advance(*rd)
	if r.stalled {
		// The log is known damaged below what these messages would
		// acknowledge: say nothing until the repair (dropping a message
		// is always safe in Raft).
		return nil, nil
	}
	return rd.MessagesAfterPersist, nil
}

// restoreConf follows Raft, which took a restored snapshot's membership
// as its own. Changes after the snapshot point are Raft's to apply again,
// even those a later checkpoint holds: a replica that restarted with its
// checkpoint's membership (change c) ahead of its cut-back log and is then
// caught up by a snapshot taken before c must apply c again, or it keeps
// the snapshot's older membership for good (sim seed 942712). The durable
// checkpoint is rewritten only when the snapshot is the later membership:
// a later one stays true (it records a committed change) and still spares
// a restart the replay of c.
func (r *Replica) restoreConf(meta consensus.SnapshotMeta) {
	r.conf = meta.ConfState
	if meta.Index > r.confIndex {
		r.confDirty = r.fs != nil
	}
	r.confIndex = meta.Index
}

func (r *Replica) applyConfChange(e consensus.Entry) error {
	cc, err := consensus.UnmarshalConfChange(e.Data)
	if err != nil {
		// A committed entry that does not decode was written by a broken
		// leader; every replica skips it the same way.
		return nil
	}
	if e.Index <= r.confIndex {
		return nil // replayed: the checkpointed membership already holds it
	}
	r.conf = r.raft.ApplyConfChange(cc)
	r.confIndex = e.Index
	r.confDirty = r.fs != nil
	return nil
}

// saveConf writes the membership checkpoint if a change was applied since
// it was last written (once per Ready, however many changes it applied).
func (r *Replica) saveConf() error {
	if !r.confDirty {
		return nil
	}
	r.confDirty = false
	if err := writeConfCheckpoint(r.fs, r.dir, confCheckpoint{Index: r.confIndex, Conf: r.conf}); err != nil {
		return fmt.Errorf("replica %d: membership checkpoint: %w", r.Group, err)
	}
	return nil
}

// TakeReadStates returns and forgets the ReadIndex answers received.
func (r *Replica) TakeReadStates() []consensus.ReadState {
	rs := r.readStates
	r.readStates = nil
	return rs
}

// Damaged reports whether a read of this replica's log met damaged data.
func (r *Replica) Damaged() bool { return r.storage.damaged }

// MarkDamaged records that a read outside Raft (a consumer's fetch) met
// damaged data.
func (r *Replica) MarkDamaged() { r.storage.damaged = true }

// ClearDamaged forgets a damage report that a full scan did not confirm.
func (r *Replica) ClearDamaged() { r.storage.damaged = false }

// Abandon drops the in-flight Readys without completing them (the sync
// failed: the node must stop this replica, since Raft cannot be told "not
// durable").
func (r *Replica) Abandon() {
	r.changed()
	r.inflight = nil
}

// changed tells the host the replica is registered with that Raft may have
// new work (HasWork may have become true): the reactor asks only such
// groups for a Ready (node/workset.go). Every method that drives Raft, or
// changes the log or the Ready in flight, calls it; reads do not.
func (r *Replica) changed() {
	if r.host != nil {
		r.host.Changed(r.Group)
	}
}
