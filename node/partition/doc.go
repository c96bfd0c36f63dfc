// Package partition is the state machine of one Kafka partition replica: the
// idempotent-producer table, the high watermark, offset assignment on the
// leader, and the checkpoint a Raft snapshot carries. The bytes themselves
// live in the partition's logstore.Log, which is also its Raft log.
//
// Core code: deterministic, no I/O except through logstore, no goroutines.
package partition
