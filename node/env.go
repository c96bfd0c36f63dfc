package node

import (
	"math/rand"
	"time"

	"github.com/floe-broker/floe/clock"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/group"
	"github.com/floe-broker/floe/node/txn"
)

// Env is everything a Reactor gets from the world. The production runtime
// and the simulator each build one.
type Env struct {
	Clock clock.Clock
	// Sched runs a function later on the reactor's own thread.
	Sched clock.Scheduler
	FS    logstore.FS
	Net   netx.Transport
	Disk  Disk
	// Rand is the reactor's only randomness (Raft election timeouts,
	// producer id jitter). The simulator seeds it.
	Rand *rand.Rand
	// Logf logs a line (the simulator adds it to its trace).
	Logf func(format string, args ...any)
	// Fatal is called when the node cannot go on (an fsync failed: the page
	// cache may have dropped the data, so the only safe answer is to stop
	// and recover from what is durable). Production exits the process; the
	// simulator crashes the node.
	Fatal func(err error)
	// Buggify, when set (simulation only), makes fault sites inside
	// product code fire with small seeded probabilities.
	Buggify *rand.Rand
	// OnBuggify, when set, is told the name of every BUGGIFY site that
	// fires (buggify.go), for the simulator's coverage table.
	OnBuggify func(site string)
	// BuggifyOptIn names the opt-in BUGGIFY sites turned on (buggify.go):
	// such a site never draws unless named here, so the simulator's
	// default seeds never reach it and only focused tests do.
	BuggifyOptIn map[string]bool
	// BuggifyHealed, when set (simulation only), reports whether the
	// simulator has healed the cluster. From then on the BUGGIFY sites
	// whose effect lasts (a Raft member made with small append messages)
	// stop firing and their effects end, as every injected fault's does,
	// so the simulator's liveness bounds hold; the other sites go on.
	BuggifyHealed func() bool
	// AuditSink, when set, receives every audit record this broker
	// generates, as one line of JSON, when it generates it (before the
	// leader of __audit_log chains it). The runtime writes them to
	// --audit-log-file. It must not block.
	AuditSink func(record []byte)
	// DiskSpace, when set, tells the data directory's path as the operator
	// knows it and the size and free space of its filesystem, in bytes
	// (DescribeLogDirs). Nil: the path is Config.DataDir and the sizes are
	// unknown.
	DiskSpace func() (dir string, totalBytes, usableBytes int64, err error)
	// ReadBuffers, when set, are the read buffers of the reactor's logs
	// (logstore.Options.ReadBuffers), shared with every reactor given the
	// same ones: all of them must run on one goroutine (the simulator's
	// brokers). Nil: the reactor's own.
	ReadBuffers *logstore.ReadBuffers
	// GroupImages, when set, memoizes the consumer-group images the
	// reactor's group coordinators decode when they load
	// (group.Env.Images), shared with every reactor given the same one: all
	// of them must run on one goroutine (the simulator's brokers, which
	// reload the same offsets partitions thousands of times). Nil: no memo,
	// a broker's choice: it loads once per leadership term, and a memo
	// would hold up to 32 MiB of image bytes plus their decoded copies for
	// the process's life.
	GroupImages *group.Images
}

// Disk runs fsyncs off the reactor.
//
// Contract: Sync runs every plan (in any order, possibly in parallel) and
// then calls done exactly once on the reactor's thread with the first error,
// or nil. It never calls done synchronously from inside Sync. Plans handed to
// one Sync call may be grouped with other calls' into one round of fsyncs
// (group commit).
type Disk interface {
	Sync(plans []*logstore.SyncPlan, done func(err error))
}

// Peer is an initial controller voter.
type Peer struct {
	ID       int32
	RaftAddr string
}

// Config is a broker's static configuration.
type Config struct {
	NodeID    int32
	ClusterID string
	// KafkaHost and KafkaPort are the address clients are told to use.
	KafkaHost string
	KafkaPort int32
	// Listeners are the advertised address of each Kafka listener, by
	// name; Metadata answers each client with its listener's addresses.
	// Empty: one address, KafkaHost:KafkaPort, for every listener.
	Listeners []controller.Endpoint
	RaftAddr  string
	Rack      string
	// Peers are the initial controller voters. Empty means a single-node
	// cluster whose only voter is this node. A node that is not among them
	// joins an existing cluster as a controller learner.
	Peers []Peer
	// Join is the Raft address of a running broker to ask for admission
	// when this node is not an initial voter.
	Join string
	// DataDir is the directory, inside Env.FS, holding every log.
	DataDir string

	TickInterval   time.Duration
	ElectionTicks  int
	HeartbeatTicks int
	// ReplicaLagMax is Kafka's replica.lag.time.max.ms: a voter is in
	// sync (the ISR of Metadata, under-replicated metrics) while it has
	// caught up with its leader's log within this long (isr.go). 0:
	// DefaultReplicaLagMax.
	ReplicaLagMax time.Duration
	// LeaseMargin is the fraction of a follower's promise a read lease
	// uses (lease.go): the leases stay safe while no clock runs more than
	// 1/LeaseMargin times as fast as another's. 0 means 0.8; at most 0.9.
	LeaseMargin float64
	// ControllerSnapshotEntries is how many applied controller entries
	// pass between snapshots of the metadata (0: ctlSnapshotEvery). Tests
	// set it small so that snapshots and log compaction happen.
	ControllerSnapshotEntries int
	// MaintenanceTicks is how often (in ticks) retention and compaction
	// run (0: maintenanceTicks, 100).
	MaintenanceTicks int
	// SyncPipeline is how many rounds of group-commit fsyncs may be in
	// flight at once, and so how many Readys each replica may have in
	// flight (0: 2, the most logstore.PlansInFlightMax allows; 1: one
	// round at a time, the lockstep before issue 21).
	SyncPipeline int

	AutoCreateTopics       bool
	DefaultPartitions      int32
	DefaultReplication     int16 // 0: min(3, brokers)
	OffsetsTopicPartitions int32
	// TopicDefaults overrides Kafka's topic config defaults broker-wide.
	TopicDefaults map[string]string
	// ForwardTimeout bounds how long a broker waits for the controller to
	// apply a command it asked for.
	ForwardTimeout time.Duration
	// Groups configures the consumer group coordinator (zero: Kafka's
	// defaults).
	Groups group.Config
	// Telemetry is the KIP-714 client telemetry subscription (telemetry.go).
	Telemetry TelemetryConfig
	// Txn configures the transaction coordinator (zero: Kafka's defaults).
	Txn txn.Config
	// Shares configures share groups (shares.go; zero: Kafka's defaults).
	Shares ShareConfig
	// Security configures authorization and the audit log (security.go).
	Security SecurityConfig
	// BootstrapUsers are the first users of a new cluster, their SCRAM
	// credentials already derived (never the passwords). They are applied
	// once in the cluster's life (users.go).
	BootstrapUsers []controller.User
	// Balancer is what the controller's leader evens out between brokers
	// (balance.go); the zero value is off (cmd/floe turns it on).
	Balancer controller.BalanceMode
	// BalancerMovesMax bounds the replica moves in flight at once (0: 4).
	BalancerMovesMax int
	// MoveRateBytes limits, in bytes per second, the log entries a
	// partition's leader sends each replica it is adding in a
	// reassignment (balancer's or operator's): throttle.go. 0: no limit.
	MoveRateBytes int64
}

// withDefaults fills unset fields.
// DefaultOffsetsTopicPartitions is __consumer_offsets' partition count when
// Config.OffsetsTopicPartitions is 0 (Kafka's offsets.topic.num.partitions
// is 50; Floe's default is smaller).
const DefaultOffsetsTopicPartitions = 16

func (c Config) withDefaults() Config {
	if c.NodeID == 0 {
		c.NodeID = 1
	}
	if c.SyncPipeline <= 0 {
		c.SyncPipeline = 2
	}
	if c.ClusterID == "" {
		c.ClusterID = "floe"
	}
	if c.KafkaHost == "" {
		c.KafkaHost = "127.0.0.1"
	}
	if c.KafkaPort == 0 {
		c.KafkaPort = 9092
	}
	if c.TickInterval == 0 {
		c.TickInterval = DefaultTickInterval
	}
	if c.ElectionTicks == 0 {
		c.ElectionTicks = 10
	}
	if c.HeartbeatTicks == 0 {
		c.HeartbeatTicks = 2
	}
	if c.LeaseMargin <= 0 || c.LeaseMargin > leaseMarginMax {
		c.LeaseMargin = leaseMargin
	}
	if c.DefaultPartitions == 0 {
		c.DefaultPartitions = 1
	}
	if c.OffsetsTopicPartitions == 0 {
		c.OffsetsTopicPartitions = DefaultOffsetsTopicPartitions
	}
	if c.ForwardTimeout == 0 {
		c.ForwardTimeout = 30 * time.Second
	}
	if c.DataDir == "" {
		c.DataDir = "."
	}
	return c
}

// DefaultTickInterval is Config.TickInterval's default.
const DefaultTickInterval = 50 * time.Millisecond

// DefaultElectionTimeout is `floe serve`'s minimum Raft election timeout
// (Config.ElectionTicks × TickInterval). A Config's zero ElectionTicks
// keeps 10 ticks (the tests and the simulator choose their own).
const DefaultElectionTimeout = time.Second
