// Package history is the operation history that Floe's checkers read: the
// one format both the simulator (sim) and the Docker suite (jepsen) record.
//
// A history is a sequence of events in the order they happened. A client
// operation appears twice: an invoke when a process starts it, and one
// completion when it ends: ok (it happened, with its results), fail (the
// client was told it did not happen) or info (the outcome is unknown: a
// timeout, a lost connection). Checkers treat fail exactly like info: Kafka
// clients report many ambiguous errors as failures, so a failed operation
// "may have happened". An invoke with no completion is also info.
//
// Each process runs one operation at a time. A process that loses track of
// an operation (info) should go on under a new process id, as in Jepsen, so
// the unknown operation stays concurrent with everything after it.
//
// Produced values are unique strings across the whole history: checkers rely
// on a value naming exactly one produce. Times are nanoseconds, real (since
// the run started) or logical (simulated); only their order matters.
//
// On disk a history is JSON lines (history.jsonl), one Op per line; see
// Encoder and Decode.
package history
