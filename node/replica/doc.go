// Package replica binds one Raft group to its durable log: it adapts a
// logstore.Log to consensus.Storage and walks a group's Ready through the
// three obligations (persist, send, apply) for the node's reactor.
//
// The partition log is the Raft log (docs/design.md, "One log per partition"): a
// produced batch is written to disk once, as a logstore entry of kind
// KindBatch, and replicated by Raft as an entry of type EntryBatch.
//
// A Replica owns its Raft node and its log; the rest of the broker uses
// only the methods in api.go (whose contract says when each may be called),
// so Take and Complete are the one driver of the node.
//
// Core code: no I/O except through logstore.FS, no goroutines, no clock.
package replica
