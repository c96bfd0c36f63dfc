package txn

import (
	"time"

	"github.com/floe-broker/floe/node/coord"
)

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

// Record, Log and Timers are coord's: a record of __transaction_state, the
// coordinator's partition of it, and its timeouts (their contracts are in
// node/coord).
type (
	Record = coord.Record
	Log    = coord.Log
	Timers = coord.Timers
)

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
