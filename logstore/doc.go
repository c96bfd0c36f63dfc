// Package logstore owns Floe's durable storage: the FS contract it writes
// through, and the segmented partition log.
//
// What it owns:
//
//   - FS and File (fs.go): the file-system contract. OSFS (osfs.go) is the
//     operating system's; SimFS (simfs.go) is in memory, crashable and
//     fault-injectable, deterministic from a *rand.Rand.
//   - Log: one partition's log, which is both its Raft log and its Kafka log
//     (a produced batch is written once). Segment files of checksummed,
//     chained entries (segment.go), sparse offset/time indexes and index
//     files (index.go), meta files for hard state and snapshot point
//     (meta.go), recovery on open (recovery.go), group commit (sync.go),
//     reads (read.go), truncation (truncate.go), snapshots, retention and
//     prefix removal (retention.go), compaction (compact.go), counters
//     (stats.go).
//
// What it must not do: the log logic is deterministic core code. No
// goroutines, no select, no time.Now or timers (time comes from
// clock.Clock or from arguments), no global randomness, no os or net: every
// byte goes through an FS. Only osfs*.go may import os. It never imports
// consensus or node, except node/records, the leaf package that is the
// broker's one copy of Kafka's record-batch format (Append's checks,
// OffsetForTime and compaction read batches through it); the node adapts
// Log to consensus.Storage.
//
// Threading: a Log belongs to one goroutine (the reactor). The one exception
// is SyncPlan.Run, which the runtime may run on an fsync goroutine (see
// sync.go for the rules that make that safe). Logs given the same
// Options.ReadBuffers share their read buffers, so all of them belong to
// one goroutine; no read hands those buffers out, except ReadTransient,
// whose Data is valid only until the next read of any of them.
package logstore
