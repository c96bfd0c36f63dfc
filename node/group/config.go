package group

import (
	"github.com/floe-broker/floe/node/coord"
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

// Record, Log and Timers are coord's: a record of __consumer_offsets, the
// coordinator's partition of it, and its timeouts (their contracts are in
// node/coord).
type (
	Record = coord.Record
	Log    = coord.Log
	Timers = coord.Timers
)

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
