package group

import (
	"math/rand"
	"time"
)

// Config holds the coordinator's settings, named after Kafka's broker
// configs.
type Config struct {
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: how long
	// the first rebalance of an empty group waits for more members, extended
	// by the same delay (up to the rebalance timeout) while members keep
	// arriving. 0 means the default; a negative value means no delay.
	InitialRebalanceDelay time.Duration
	// SessionTimeoutMin and SessionTimeoutMax bound what a member may ask
	// for (group.min/max.session.timeout.ms); outside them JoinGroup fails
	// with INVALID_SESSION_TIMEOUT.
	SessionTimeoutMin time.Duration
	SessionTimeoutMax time.Duration
	// MembersMax is group.max.size; 0 means no limit.
	MembersMax int
	// OffsetMetadataBytesMax is offset.metadata.max.bytes.
	OffsetMetadataBytesMax int
	// NewMemberJoinTimeout bounds how long a new member's JoinGroup may
	// wait in a rebalance before it is dropped (Kafka's fixed 5 minutes).
	NewMemberJoinTimeout time.Duration

	// KIP-848 consumer groups (consumer.go), Kafka's group.consumer.*:
	// ConsumerSessionTimeout is group.consumer.session.timeout.ms,
	// ConsumerHeartbeatInterval group.consumer.heartbeat.interval.ms,
	// ConsumerAssignors group.consumer.assignors (the first is the
	// default), ConsumerMaxSize group.consumer.max.size (0: no limit).
	ConsumerSessionTimeout    time.Duration
	ConsumerHeartbeatInterval time.Duration
	ConsumerAssignors         []string
	ConsumerMaxSize           int
}

// Kafka's defaults.
const (
	InitialRebalanceDelayDefault  = 3 * time.Second
	SessionTimeoutMinDefault      = 6 * time.Second
	SessionTimeoutMaxDefault      = 30 * time.Minute
	OffsetMetadataBytesMaxDefault = 4096
	NewMemberJoinTimeoutDefault   = 5 * time.Minute

	ConsumerSessionTimeoutDefault    = 45 * time.Second
	ConsumerHeartbeatIntervalDefault = 5 * time.Second
)

// WithDefaults fills unset fields with Kafka's defaults.
func (c Config) WithDefaults() Config {
	switch {
	case c.InitialRebalanceDelay == 0:
		c.InitialRebalanceDelay = InitialRebalanceDelayDefault
	case c.InitialRebalanceDelay < 0:
		c.InitialRebalanceDelay = 0
	}
	if c.SessionTimeoutMin == 0 {
		c.SessionTimeoutMin = SessionTimeoutMinDefault
	}
	if c.SessionTimeoutMax == 0 {
		c.SessionTimeoutMax = SessionTimeoutMaxDefault
	}
	if c.OffsetMetadataBytesMax == 0 {
		c.OffsetMetadataBytesMax = OffsetMetadataBytesMaxDefault
	}
	if c.NewMemberJoinTimeout == 0 {
		c.NewMemberJoinTimeout = NewMemberJoinTimeoutDefault
	}
	if c.ConsumerSessionTimeout == 0 {
		c.ConsumerSessionTimeout = ConsumerSessionTimeoutDefault
	}
	if c.ConsumerHeartbeatInterval == 0 {
		c.ConsumerHeartbeatInterval = ConsumerHeartbeatIntervalDefault
	}
	var known []string
	for _, a := range c.ConsumerAssignors {
		if a == AssignorUniform || a == AssignorRange {
			known = append(known, a)
		}
	}
	if len(known) == 0 {
		known = []string{AssignorUniform, AssignorRange}
	}
	c.ConsumerAssignors = known
	return c
}

// Record is one record of __consumer_offsets. A nil Value is a tombstone:
// it deletes Key.
type Record struct {
	Key, Value []byte
}

// Log is where a coordinator makes its state durable: its partition of
// __consumer_offsets, on which the coordinator's node is the leader.
//
// Contract: Write appends recs as one batch (all or nothing) and calls done
// exactly once, on the coordinator's thread, with the monotonic time then:
// with a nil error once the batch is committed (replicated to a quorum and
// applied), or with the error that means it will not be (a
// kerr.Error: NOT_LEADER_OR_FOLLOWER when leadership moved,
// REQUEST_TIMED_OUT, MESSAGE_TOO_LARGE, ...). done may be called before
// Write returns (an append refused at once). Batches commit in the order
// they were written.
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

// Env is what a coordinator gets from its node.
type Env struct {
	Log    Log
	Timers Timers
	// Rand makes member ids.
	Rand *rand.Rand
	// WallMillis returns the wall clock in Unix milliseconds, for the commit
	// and state timestamps stored in records (never for timeouts).
	WallMillis func() int64
	// Known reports whether a topic partition exists: committing an offset
	// for one that does not fails with UNKNOWN_TOPIC_OR_PARTITION, as in
	// Kafka. Nil means every partition exists.
	Known func(topic string, partition int32) bool
	// TxnLog writes transactional offset commits (txn.go); nil refuses
	// them with COORDINATOR_NOT_AVAILABLE.
	TxnLog TxnLog
	// Topics lists the topics consumer groups may subscribe to, sorted by
	// name, for server-side assignment (consumer.go); nil means none.
	Topics func() []TopicInfo
}
