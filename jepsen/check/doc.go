// Package check holds Floe's history checkers, shared by the simulator (sim)
// and the Docker suite (jepsen). It reads a history.History and reports, per
// checker, whether the history is valid, invalid or unknown (inconclusive),
// with the anomalies found. Callers treat unknown as failure.
//
// The checkers and the anomalies they report (names as Jepsen's Kafka
// checker uses them where one exists):
//
//	lost-write             an acknowledged produce missing from the final read
//	duplicate              one value read at two offsets (idempotent producers)
//	inconsistent-offsets   two values at one offset, over all reads and acks
//	unexpected-value       a value read that no produce wrote, or read from
//	                       another partition than the one it was produced to
//	poll                   nonmonotonic-poll, poll-skip: within one consumer's
//	                       assignment, offsets go back or skip offsets that exist
//	unseen                 an acknowledged value no consumer poll or fetch saw
//	hwm-regression         a fetch saw a high watermark lower than one seen, or
//	                       acknowledged, by an operation that ended before it began
//	committed-offset-regression
//	                       a committed offset read goes back in real time with
//	                       no commit of the lower value that could explain it
//	linearizable-log       Porcupine, per partition: the log as one sequence,
//	                       produce appends at its offset, fetch reads a prefix
//	linearizable-offsets   Porcupine, per (group, partition): committed offsets
//	                       as a register
//	txn                    transactions (history.Txn, TxnRead, TxnFinal; the
//	                       simulator's checker, TxnAnomalies in txn.go):
//	                       aborted-read, lost-write, duplicate,
//	                       torn-transaction, uncommitted-read, g1c
//	lso-regression         a last stable offset above its high watermark, or
//	                       below one seen by a read that ended before
//	txn-reads              a transactional read returned a value no
//	                       transaction wrote there, or two values at an offset
//
// Every produce that did not complete ok (fail, info, or never completed)
// "may have happened": it is never required to appear, and when it does, it
// is placed anywhere after its invoke.
//
// Use (the simulator records with a simulated clock, the Docker suite
// with the wall clock; both through history.Recorder):
//
//	rec := history.NewRecorder(nil, func() int64 { return int64(simNow()) })
//	inv := rec.Invoke(history.Op{Process: p, F: history.Produce, Records: recs})
//	rec.Complete(inv, history.OK, history.Op{Records: withOffsets})
//	...
//	rep := check.Check(rec.History(), check.Options{})
//	if rep.Valid != check.Valid { t.Fatal(rep.Summary()) } // unknown fails too
//
// Determinism: with Options.Timeout zero, a check's outcome depends only on
// the history. Porcupine searches are bounded by a step budget (counted in
// model steps, not time); a search that runs out is unknown, never valid.
// The package does no I/O.
package check
