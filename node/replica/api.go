package replica

import (
	"fmt"
	"time"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/logstore"
)

// What the rest of the broker may ask of a replica. The Replica owns its
// Raft node and its log; everything outside this package goes through the
// methods below, so there is one driver of the node (Take and Complete,
// called by the reactor) and one writer of the log (Take, plus the
// maintenance calls, which require an idle replica).
//
// Contract, by group:
//
//   - Raft requests (Propose, ProposeConfChange, Campaign, TransferLeader,
//     ReadIndex) only ask: Raft records them and their effect (entries to
//     write, messages to send) comes out of the next Take. They may be
//     called at any time on the reactor's thread, with or without a Ready
//     in flight.
//   - Reads (Status through Stats) change nothing. Log reads see every
//     entry written, durable or not; callers that may only serve committed
//     data bound their reads (Read's limit, the partition's high
//     watermark).
//   - Maintenance (SetStartOffset through Discard) changes the log outside
//     Raft; except SetStartOffset and SetSegmentLimits (which touch no
//     entry), it requires !Busy() (the reactor asks Quiet, which drains a
//     pipeline), and Discard requires the replica to be out of its Host
//     and about to be closed and reopened.
//   - Durability (PrepareSync, FinishSync, Err, Sync, Close) is the
//     reactor's: it syncs what Take wrote before calling Complete, and
//     with a pipeline completes Readys in the order taken, each once the
//     round holding it and every round before it finished.
//
// Every method that drives Raft or changes the log or the Ready in flight
// tells the Host the replica is registered with (consensus.Host.Changed),
// so that the reactor asks only those groups for work (node/workset.go): a
// new method that does either must call changed too.

// Register adds the Raft node to h, which ticks it and routes its peers'
// messages to it (the host never takes its Ready: the replica does).
func (r *Replica) Register(h *consensus.Host) {
	h.Add(r.Group, r.raft)
	r.host = h
	r.changed()
}

// Propose proposes an entry of type typ; index and term say where it will
// be if it commits. ErrNotLeader (or another error) if it was not taken.
func (r *Replica) Propose(typ consensus.EntryType, data []byte) (index, term uint64, err error) {
	r.changed()
	return r.raft.Propose(typ, data)
}

// ProposeConfChange proposes a membership change.
func (r *Replica) ProposeConfChange(cc consensus.ConfChange) (index, term uint64, err error) {
	r.changed()
	return r.raft.ProposeConfChange(cc)
}

// Campaign starts an election (a pre-vote first, if configured).
func (r *Replica) Campaign() { r.changed(); r.raft.Campaign() }

// TransferLeader asks the leader to hand leadership to member to.
func (r *Replica) TransferLeader(to uint64) { r.changed(); r.raft.TransferLeader(to) }

// StepDown makes a leader a follower in its term (consensus.RawNode.StepDown).
func (r *Replica) StepDown() { r.changed(); r.raft.StepDown() }

// ReadIndex asks the leader to confirm its leadership; the answer, carrying
// ctx, comes back through TakeReadStates.
func (r *Replica) ReadIndex(ctx []byte) { r.changed(); r.raft.ReadIndex(ctx) }

// Status is Raft's full status (with the leader's view of its followers).
func (r *Replica) Status() consensus.Status { return r.raft.Status() }

// BasicStatus is Raft's status without the followers' progress (cheaper).
func (r *Replica) BasicStatus() consensus.Status { return r.raft.BasicStatus() }

// LeadHeardTicksAgo is how many ticks ago this member last heard from the
// leader it follows (consensus.RawNode.LeadHeardTicksAgo).
func (r *Replica) LeadHeardTicksAgo() int64 { return r.raft.LeadHeardTicksAgo() }

// RaftHardSoft is Raft's hard and soft state: BasicStatus's HardState and
// SoftState without the rest (consensus.RawNode.HardSoft).
func (r *Replica) RaftHardSoft() (consensus.HardState, consensus.SoftState) {
	return r.raft.HardSoft()
}

// VoteFence is the vote fence Raft still holds (zero once lifted).
func (r *Replica) VoteFence() consensus.VoteFence { return r.raft.VoteFence() }

// TermProbeVoters returns the voters the lost-log fence's term probe asks
// (consensus.RawNode.TermProbeVoters).
func (r *Replica) TermProbeVoters() []uint64 { return r.raft.TermProbeVoters() }

// LeaderLogFence is what a lost-log fence became in Raft (zero until a
// leader told its log end): consensus.RawNode.LeaderLogFence.
func (r *Replica) LeaderLogFence() consensus.VoteFence { return r.raft.LeaderLogFence() }

// FirstIndex is the first log index held (after the snapshot point).
func (r *Replica) FirstIndex() uint64 { return r.log.FirstIndex() }

// LastIndex is the last log index written.
func (r *Replica) LastIndex() uint64 { return r.log.LastIndex() }

// DurableIndex is the last log index known synced.
func (r *Replica) DurableIndex() uint64 { return r.log.DurableIndex() }

// Term is the term of the entry at log index i.
func (r *Replica) Term(i uint64) (uint64, error) { return r.log.Term(i) }

// HardState is Raft's persisted state as the log holds it.
func (r *Replica) HardState() logstore.HardState { return r.log.HardState() }

// Entries returns log entries [lo, hi), up to about maxBytes.
func (r *Replica) Entries(lo, hi uint64, maxBytes int) ([]logstore.Entry, error) {
	return r.log.Entries(lo, hi, maxBytes)
}

// Snapshot is the log's snapshot point.
func (r *Replica) Snapshot() logstore.SnapshotMeta { return r.log.Snapshot() }

// StartOffset is the log's first record offset.
func (r *Replica) StartOffset() int64 { return r.log.StartOffset() }

// NextOffset is the offset the next record batch written gets.
func (r *Replica) NextOffset() int64 { return r.log.NextOffset() }

// MaxTimestamp is the offset and timestamp of the record with the largest
// timestamp below limitOffset (ok false if there is none).
func (r *Replica) MaxTimestamp(limitOffset int64) (offset, timestamp int64, ok bool, err error) {
	return r.log.MaxTimestamp(limitOffset)
}

// OffsetAfterIndex is the record offset just after log index index (-1
// if the log cannot tell).
func (r *Replica) OffsetAfterIndex(index uint64) int64 { return r.log.OffsetAfterIndex(index) }

// Read returns whole record batches from offset, up to maxBytes, below
// limitOffset.
func (r *Replica) Read(offset int64, maxBytes int, limitOffset int64) (logstore.ReadResult, error) {
	return r.log.Read(offset, maxBytes, limitOffset)
}

// ReadTransient is Read whose Data is the log's read buffer
// (logstore.Log.ReadTransient): valid until the next read of any log
// sharing it; the caller copies what it keeps.
func (r *Replica) ReadTransient(offset int64, maxBytes int, limitOffset int64) (logstore.ReadResult, error) {
	return r.log.ReadTransient(offset, maxBytes, limitOffset)
}

// OffsetForTime is the first offset whose timestamp is at or after ts.
func (r *Replica) OffsetForTime(ts int64) (offset int64, ok bool, err error) {
	return r.log.OffsetForTime(ts)
}

// RetentionBound is the log index retention may cut up to (logstore).
func (r *Replica) RetentionBound(nowMs, retentionMs, retentionBytes int64, limitIndex uint64) uint64 {
	return r.log.RetentionBound(nowMs, retentionMs, retentionBytes, limitIndex)
}

// Stats describes the log's segments and size.
func (r *Replica) Stats() logstore.Stats { return r.log.Stats() }

// SetStartOffset records a new logical start offset (DeleteRecords).
func (r *Replica) SetStartOffset(offset int64) error {
	r.changed()
	return r.log.SetStartOffset(offset)
}

// SetSegmentLimits sets when the log rolls a new segment.
func (r *Replica) SetSegmentLimits(bytes int64, age time.Duration) {
	r.log.SetSegmentLimits(bytes, age)
}

// SetSnapshot records m as the log's snapshot point. Requires !Busy();
// a point past SnapshotBound is refused.
func (r *Replica) SetSnapshot(m logstore.SnapshotMeta) error {
	if b := r.SnapshotBound(); m.Index > b {
		return fmt.Errorf("replica %d: snapshot point %d past %d, the index Raft has applied", r.Group, m.Index, b)
	}
	r.changed()
	return r.log.SetSnapshot(m)
}

// SnapshotBound is the highest index the log's snapshot point may move to:
// the applied index, but not past Raft's. The entries ApplyCommittedBusy
// applied are handed out by Raft in a later Ready all the same, read from
// the log (consensus raftLog.nextCommittedEnts); with the snapshot point
// past them that read fails every time, and the replica applies nothing
// more until it restarts (sim seed 1000209: a controller snapshot one
// entry ahead of Raft froze a broker's metadata).
func (r *Replica) SnapshotBound() uint64 { return min(r.applied, r.raft.BasicStatus().Applied) }

// CompactTo drops the log's segments wholly at or below index, which must
// not pass the snapshot point. Requires !Busy().
func (r *Replica) CompactTo(index uint64) (segmentsRemoved int, err error) {
	r.changed()
	return r.log.CompactTo(index)
}

// CleanStep runs one step of log compaction (cleanup.policy=compact) on
// entries below limitIndex. Requires !Busy().
func (r *Replica) CleanStep(now time.Time, cfg logstore.CleanConfig, limitIndex uint64) (done bool, err error) {
	r.changed()
	return r.log.CleanStep(now, cfg, limitIndex)
}

// Discard drops every entry after index cut and lowers the recorded commit
// index to it (repair: the entries are fetched from the leader again).
// Requires the replica out of its Host, to be closed and reopened.
func (r *Replica) Discard(cut uint64) error {
	r.changed()
	if err := r.log.TruncateAfter(cut); err != nil {
		return err
	}
	if hs := r.log.HardState(); hs.Commit > cut {
		hs.Commit = cut
		r.log.SetHardState(hs)
	}
	return nil
}

// PrepareSync starts a sync of what the log holds unsynced (nil: nothing
// to sync): what Take wrote, or a change without a Ready such as a
// retention step's new snapshot point and the segment files it drops. The
// caller runs the plan and calls FinishSync with its result.
func (r *Replica) PrepareSync() *logstore.SyncPlan { return r.log.PrepareSync() }

// SyncBlocked reports whether PrepareSync must wait for a sync in flight
// to finish (logstore's SyncBlocked).
func (r *Replica) SyncBlocked() bool { return r.log.SyncBlocked() }

// FinishSync ends a sync PrepareSync started.
func (r *Replica) FinishSync(p *logstore.SyncPlan, err error) {
	r.changed()
	r.log.FinishSync(p, err)
}

// SyncInFlight reports whether a plan PrepareSync returned is not finished
// yet (any of the log's plans in flight). Busy implies nothing about it: a sync without a Ready (a retention
// step's, maintain.go) leaves the replica not Busy, and such a replica
// must not be closed, reopened or deleted until the plan finishes (its Run
// may still be writing the meta record).
func (r *Replica) SyncInFlight() bool { return r.log.SyncsInFlight() > 0 }

// Err is the log's write failure, if one happened: nothing written since
// may be acknowledged.
func (r *Replica) Err() error { return r.log.Err() }

// Sync syncs the log now (at shutdown).
func (r *Replica) Sync() error { return r.log.Sync() }

// Close closes the log. The replica is not used after.
func (r *Replica) Close() error { return r.log.Close() }

// AddSendBudget limits the entry bytes this replica sends member id as
// leader (consensus/throttle.go).
func (r *Replica) AddSendBudget(id uint64, bytes, capBytes int64) {
	r.changed()
	r.raft.AddSendBudget(id, bytes, capBytes)
}

// Unthrottle lifts the limit on what this replica sends member id.
func (r *Replica) Unthrottle(id uint64) { r.changed(); r.raft.Unthrottle(id) }

// SetMessageLimits changes the Raft member's append size and appends in
// flight per member (consensus's SetMessageLimits).
func (r *Replica) SetMessageLimits(maxSizePerMsg uint64, maxInflightMsgs int) {
	r.changed()
	r.raft.SetMessageLimits(maxSizePerMsg, maxInflightMsgs)
}
