package group

import (
	"fmt"
	"math/rand"
	"time"

	"github.com/floe-broker/floe/node/coord"
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
	// ConsumerMigrationPolicy is group.consumer.migration.policy: which
	// online migrations between the classic and the consumer protocol a
	// group with members may make (migrate.go): bidirectional (the
	// default), upgrade, downgrade or disabled.
	ConsumerMigrationPolicy string
	// The bounds of a group's own timeouts (CheckConsumerTimeouts), Kafka's
	// group.consumer.min/max.session.timeout.ms and
	// group.consumer.min/max.heartbeat.interval.ms. Unset: Kafka's
	// defaults, widened to hold the broker's own timeouts.
	ConsumerSessionTimeoutMin    time.Duration
	ConsumerSessionTimeoutMax    time.Duration
	ConsumerHeartbeatIntervalMin time.Duration
	ConsumerHeartbeatIntervalMax time.Duration
}

// ConsumerTimeouts are one consumer group's own session timeout and
// heartbeat interval: Kafka's group configs consumer.session.timeout.ms
// and consumer.heartbeat.interval.ms. A zero field means the broker's
// (Config).
type ConsumerTimeouts struct {
	Session           time.Duration
	HeartbeatInterval time.Duration
}

// consumerTimeouts fills t's unset fields with the broker's values.
func (c Config) consumerTimeouts(t ConsumerTimeouts) ConsumerTimeouts {
	if t.Session <= 0 {
		t.Session = c.ConsumerSessionTimeout
	}
	if t.HeartbeatInterval <= 0 {
		t.HeartbeatInterval = c.ConsumerHeartbeatInterval
	}
	return t
}

// CheckConsumerTimeouts checks a group's timeouts (unset fields: the
// broker's) as Kafka's GroupConfig.validate does: each within its bounds,
// and the session longer than the heartbeat interval. c must have its
// defaults (WithDefaults).
func (c Config) CheckConsumerTimeouts(t ConsumerTimeouts) error {
	t = c.consumerTimeouts(t)
	switch {
	case t.Session < c.ConsumerSessionTimeoutMin || t.Session > c.ConsumerSessionTimeoutMax:
		return fmt.Errorf("consumer.session.timeout.ms must be from %d to %d",
			c.ConsumerSessionTimeoutMin.Milliseconds(), c.ConsumerSessionTimeoutMax.Milliseconds())
	case t.HeartbeatInterval < c.ConsumerHeartbeatIntervalMin || t.HeartbeatInterval > c.ConsumerHeartbeatIntervalMax:
		return fmt.Errorf("consumer.heartbeat.interval.ms must be from %d to %d",
			c.ConsumerHeartbeatIntervalMin.Milliseconds(), c.ConsumerHeartbeatIntervalMax.Milliseconds())
	case t.Session <= t.HeartbeatInterval:
		return fmt.Errorf("consumer.session.timeout.ms (%d) must be greater than consumer.heartbeat.interval.ms (%d)",
			t.Session.Milliseconds(), t.HeartbeatInterval.Milliseconds())
	}
	return nil
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

	ConsumerSessionTimeoutMinDefault    = 45 * time.Second
	ConsumerSessionTimeoutMaxDefault    = 60 * time.Second
	ConsumerHeartbeatIntervalMinDefault = 5 * time.Second
	ConsumerHeartbeatIntervalMaxDefault = 15 * time.Second
)

// bound returns v, or def widened to hold want when v is unset.
func bound(v, def, want time.Duration, lower bool) time.Duration {
	switch {
	case v > 0:
		return v
	case lower:
		return min(def, want)
	default:
		return max(def, want)
	}
}

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
	c.ConsumerSessionTimeoutMin = bound(c.ConsumerSessionTimeoutMin, ConsumerSessionTimeoutMinDefault, c.ConsumerSessionTimeout, true)
	c.ConsumerSessionTimeoutMax = bound(c.ConsumerSessionTimeoutMax, ConsumerSessionTimeoutMaxDefault, c.ConsumerSessionTimeout, false)
	c.ConsumerHeartbeatIntervalMin = bound(c.ConsumerHeartbeatIntervalMin, ConsumerHeartbeatIntervalMinDefault, c.ConsumerHeartbeatInterval, true)
	c.ConsumerHeartbeatIntervalMax = bound(c.ConsumerHeartbeatIntervalMax, ConsumerHeartbeatIntervalMaxDefault, c.ConsumerHeartbeatInterval, false)
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
	if c.ConsumerMigrationPolicy == "" {
		c.ConsumerMigrationPolicy = MigrationBidirectional
	}
	return c
}

// The values of group.consumer.migration.policy.
const (
	MigrationBidirectional = "bidirectional"
	MigrationUpgrade       = "upgrade"
	MigrationDowngrade     = "downgrade"
	MigrationDisabled      = "disabled"
)

// CheckMigrationPolicy checks a group.consumer.migration.policy value
// (Kafka takes it case-insensitively; so does Floe, lower-cased).
func CheckMigrationPolicy(p string) error {
	switch p {
	case MigrationBidirectional, MigrationUpgrade, MigrationDowngrade, MigrationDisabled:
		return nil
	}
	return fmt.Errorf("group.consumer.migration.policy %q: must be one of bidirectional, upgrade, downgrade, disabled", p)
}

func (c Config) upgradeEnabled() bool {
	return c.ConsumerMigrationPolicy == MigrationBidirectional || c.ConsumerMigrationPolicy == MigrationUpgrade
}

func (c Config) downgradeEnabled() bool {
	return c.ConsumerMigrationPolicy == MigrationBidirectional || c.ConsumerMigrationPolicy == MigrationDowngrade
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
	// ConsumerTimeouts returns a consumer group's own timeouts (its group
	// configs, checked with Config.CheckConsumerTimeouts); nil, or a zero
	// field, means the broker's. A change applies to a member from its
	// next heartbeat.
	ConsumerTimeouts func(group string) ConsumerTimeouts
	// MayDescribe reports whether principal, connecting from host, may
	// DESCRIBE topic: a consumer member's regex subscription matches only
	// such topics, as in Kafka. It is asked with the member's recorded
	// principal at every resolution (any member's heartbeat), so an ACL
	// change applies from the next one. Nil allows every topic.
	MayDescribe func(principal, host, topic string) bool
	// Images, when set, memoizes the consumer-group images replays decode
	// (images.go); it may be shared by coordinators on one goroutine. Nil
	// decodes every image each time.
	Images *Images
}
