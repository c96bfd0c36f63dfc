package txn

import "time"

// Config holds the coordinator's settings, named after Kafka's broker
// configs.
type Config struct {
	// MaxTimeout is transaction.max.timeout.ms: a producer asking for a
	// longer transaction timeout gets INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration
	// RetryBackoff is how long the coordinator waits before sending the
	// markers of a decided transaction again after a failure, and before
	// looking again at a timed-out transaction that was busy.
	RetryBackoff time.Duration
}

// Kafka's defaults.
const (
	MaxTimeoutDefault   = 15 * time.Minute
	RetryBackoffDefault = 100 * time.Millisecond
)

// WithDefaults fills unset fields with the defaults.
func (c Config) WithDefaults() Config {
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = MaxTimeoutDefault
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = RetryBackoffDefault
	}
	return c
}

// Record is one record of __transaction_state. A nil Value is a tombstone.
type Record struct {
	Key, Value []byte
}

// Log is where a coordinator makes its state durable: its partition of
// __transaction_state, on which the coordinator's node is the leader.
//
// Contract: Write appends recs as one batch (all or nothing) and calls done
// exactly once, on the coordinator's thread, with the monotonic time then:
// with a nil error once the batch is committed (replicated to a quorum and
// applied), or with the error that means it will not be. done may be called
// before Write returns. Batches commit in the order they were written.
type Log interface {
	Write(recs []Record, done func(now time.Duration, err error))
}

// Timers schedules the coordinator's timeouts.
//
// Contract: After(d, fn) runs fn once, no earlier than d from now, on the
// coordinator's thread, passing the monotonic time then; never from inside
// After. There is no cancellation: the coordinator ignores stale timers.
type Timers interface {
	After(d time.Duration, fn func(now time.Duration))
}

// Marker is the end of one transaction, to be written to each of its
// partitions as a control batch (commit or abort) of producer ProducerID
// at ProducerEpoch. A partition of __consumer_offsets stands for the
// transactional offsets of the groups it holds: the group coordinator
// makes them final (commit) or drops them (abort).
type Marker struct {
	TransactionalID  string
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	Partitions       []TopicPartition // sorted
}

// Markers delivers transaction markers.
//
// Contract: Write writes m's marker to every partition of m and calls done
// exactly once, on the coordinator's thread: nil once every marker is
// durable on its partition, else an error (the coordinator retries the
// whole set; a marker written twice is harmless, since a partition ignores
// a marker for a transaction it does not have open). done may be called
// before Write returns.
type Markers interface {
	Write(m Marker, done func(now time.Duration, err error))
}

// ProducerIDs hands out cluster-unique producer ids.
//
// Contract: Next calls done exactly once, on the coordinator's thread,
// with a fresh id or an error (the request is answered with it).
type ProducerIDs interface {
	Next(done func(pid int64, err error))
}

// Env is what a coordinator gets from its node.
type Env struct {
	Log         Log
	Timers      Timers
	Markers     Markers
	ProducerIDs ProducerIDs
	// WallMillis returns the wall clock in Unix milliseconds, for the
	// timestamps stored in records and shown by DescribeTransactions
	// (never for timeouts). Nil means 0.
	WallMillis func() int64
	// Epoch is the coordinator epoch markers carry (the Raft term of the
	// partition, as Kafka uses the partition leader epoch).
	Epoch int32
}
