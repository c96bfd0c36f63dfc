// Package consensus is Raft as a pure, deterministic state machine.
//
// The caller feeds it messages (Step) and ticks (Tick), proposes data
// (Propose), and collects a Ready: what to persist, what to send (now, or only
// after the persist is durable), and which committed entries to apply. It
// calls Advance once the Ready has been handled. See api.go for the contract.
//
// It covers leader election with pre-vote and check-quorum, log replication
// with pipelining and flow control, commit by quorum of current-term entries
// only, leader transfer, single-server membership change with learners,
// snapshots and log truncation, and ReadIndex. Host runs many groups on one
// node and coalesces their heartbeats per peer.
//
// What it must not do: no I/O, no goroutines, no select, no clock, no global
// randomness (election timeouts come from the injected *rand.Rand), no
// iteration over maps where the order reaches an output. It imports no other
// Floe package: the storage it needs is the Storage interface below, which
// node satisfies with logstore.
package consensus
