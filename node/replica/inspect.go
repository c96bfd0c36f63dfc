package replica

import "github.com/floe-broker/floe/logstore"

// Read-only accessors for white-box checkers (node.Reactor.Inspect, the
// simulator's invariants). None changes anything.

// DurableHardState is the newest hard state a sync made durable.
func (r *Replica) DurableHardState() logstore.HardState { return r.log.DurableHardState() }

// RaftTermAt is the term of entry i in Raft's log, written or not.
func (r *Replica) RaftTermAt(i uint64) (uint64, error) { return r.raft.TermAt(i) }

// Settled reports that no Ready is in flight or pending: Raft's hard state
// has been handed to the log and synced.
func (r *Replica) Settled() bool { return r.inflight == nil && !r.raft.HasReady() }
