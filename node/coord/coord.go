package coord

import "time"

// Record is one record of a coordinator's internal topic. A nil Value is
// a tombstone: it deletes Key.
type Record struct {
	Key, Value []byte
}

// Log is where a coordinator makes its state durable: its partition of
// the internal topic, on which the coordinator's node is the leader.
//
// Contract: Write appends recs as one batch (all or nothing) and calls done
// exactly once, on the coordinator's thread, with the monotonic time then:
// with a nil error once the batch is committed (replicated to a quorum and
// applied), or with the error that means it will not be (a kerr.Error:
// NOT_LEADER_OR_FOLLOWER when leadership moved, REQUEST_TIMED_OUT,
// MESSAGE_TOO_LARGE, ...). done may be called before Write returns (an
// append refused at once). Batches commit in the order they were written.
type Log interface {
	Write(recs []Record, done func(now time.Duration, err error))
}

// Timers schedules a coordinator's timeouts.
//
// Contract: After(d, fn) runs fn once, no earlier than d from now, on the
// coordinator's thread, passing the monotonic time then; never from inside
// After. There is no cancellation: the coordinator ignores stale timers.
type Timers interface {
	After(d time.Duration, fn func(now time.Duration))
}
