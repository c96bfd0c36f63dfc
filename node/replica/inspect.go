package replica

import (
	"errors"

	"github.com/floe-broker/floe/logstore"
)

// Read-only accessors for white-box checkers (node.Reactor.Inspect, the
// simulator's invariants). None changes anything.

// DurableHardState is the newest hard state a sync made durable.
func (r *Replica) DurableHardState() logstore.HardState { return r.log.DurableHardState() }

// RaftTermAt is the term of entry i in Raft's log, written or not.
func (r *Replica) RaftTermAt(i uint64) (uint64, error) { return r.raft.TermAt(i) }

// DurableAgreedIndex is the last durable index whose entry Raft's log
// holds too: DurableIndex, cut back below any durable entry Raft has
// already replaced in memory. Between a Step that takes a leader's
// conflicting entries and the Take that truncates the log, Raft's commit
// may cover the leader's entries while the log's durable ones at the same
// indexes are the old, never committed ones (sim seeds 912108 and 913181:
// a restarted ex-leader held its own uncommitted term-2 tail to 22 durably
// while Raft already counted the new leader's 21..22 committed). Only
// entries up to here are both on disk and the entries Raft's commit
// speaks of.
//
// By Raft's log matching, equal terms at an index mean equal prefixes, so
// agreement holds up to a point and not after it: a binary search finds it.
func (r *Replica) DurableAgreedIndex() uint64 {
	hi := r.log.DurableIndex()
	if r.agrees(hi) {
		return hi
	}
	lo := r.log.FirstIndex() - 1 // the snapshot point, or below: agrees
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if r.agrees(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// agrees reports whether the log and Raft hold the same entry at i. An
// index compacted from the log is below its snapshot, so committed and
// agreed.
func (r *Replica) agrees(i uint64) bool {
	lt, err := r.log.Term(i)
	if errors.Is(err, logstore.ErrCompacted) {
		return true
	}
	rt, rerr := r.raft.TermAt(i)
	return err == nil && rerr == nil && lt == rt
}

// Settled reports that no Ready is in flight or pending: Raft's hard state
// has been handed to the log and synced.
func (r *Replica) Settled() bool { return r.inflight == nil && !r.raft.HasReady() }
