// Package coord holds what the coordinators hosted on a partition of an
// internal topic share: the group coordinator (node/group, on
// __consumer_offsets) and the transaction coordinator (node/txn, on
// __transaction_state). Each is a deterministic state machine that makes
// its state durable through a Log and schedules its timeouts through
// Timers; node/coordinators.go and node/txns.go give them the partition's
// Raft group and the reactor's clock. Package coordtest has the fakes
// their tests drive them with.
package coord
