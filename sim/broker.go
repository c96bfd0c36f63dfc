package sim

import (
	"fmt"
	"math/rand"
	"strings"
	"time"

	"github.com/floe-broker/floe/clock"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/group"
)

// Broker is a sim Instance running a full Floe broker: node.Reactor, the
// production code, on the node's simulated clock, scheduler, network, FS
// and disk.
type Broker struct {
	R *node.Reactor
	// auth is the incarnation's SASL server and sessions (auth.go), nil
	// when the run does not authenticate.
	auth *brokerAuth
}

// Handle passes a peer frame to the reactor.
func (b *Broker) Handle(from netx.NodeID, msg []byte) { b.R.HandlePeer(from, msg) }

// Stop stops the reactor cleanly (its logs are synced and closed).
func (b *Broker) Stop() { b.R.Stop() }

// LeaderEpochOf is the reactor's: the epoch the broker leads
// topic/partition in, if it believes it leads it (epochLeader, known.go).
func (b *Broker) LeaderEpochOf(topic string, partition int32) (int32, bool) {
	return b.R.LeaderEpochOf(topic, partition)
}

// BrokerConfig shapes the brokers of a simulated cluster.
type BrokerConfig struct {
	// Nodes is the cluster size; every node is an initial controller voter.
	Nodes int
	// Tick is the reactor's tick (node.Config.TickInterval).
	Tick time.Duration
	// ElectionTicks and HeartbeatTicks are Raft's timeouts, in ticks.
	ElectionTicks, HeartbeatTicks int
	// OffsetsPartitions is the partition count of __consumer_offsets.
	OffsetsPartitions int32
	// ForwardTimeout bounds a broker's wait for the controller.
	ForwardTimeout time.Duration
	// DiskLatencyMin and DiskLatencyMax bound one round of fsyncs; with
	// probability DiskSlowProb a round takes DiskSlow more.
	DiskLatencyMin, DiskLatencyMax time.Duration
	DiskSlowProb                   float64
	DiskSlow                       time.Duration
	// Auth, when set, turns on SASL/SCRAM and the ACL authorizer (auth.go).
	Auth *BrokerAuth
	// LeaseMargin is node.Config.LeaseMargin (0: the default).
	LeaseMargin float64
	// CtlSnapshotEntries is node.Config.ControllerSnapshotEntries (0: the
	// default, 1024).
	CtlSnapshotEntries int
	// MaintenanceTicks is node.Config.MaintenanceTicks (0: the default).
	MaintenanceTicks int
	// SyncPipeline is node.Config.SyncPipeline, the fsync rounds in
	// flight at once (0: the node's default, 2). Never drawn: set by
	// focused tests and `floe sim --fsync-pipeline 1`, to replay a seed
	// found in the lockstep (before pipelined rounds came back, branch
	// h-pipe2) or compare the two; the schedule differs, so one run
	// passing where the other fails proves little by itself.
	SyncPipeline int
	// Sites is told every BUGGIFY site that fires (node.Env.OnBuggify).
	Sites *siteCounter
	// BuggifyOptIn names the opt-in BUGGIFY sites turned on, separated by
	// spaces (node.Env.BuggifyOptIn; focused tests only, never drawn; a
	// string keeps Options comparable).
	BuggifyOptIn string
	// Healed, when set, turns true at the run's heal (node.Env.BuggifyHealed:
	// BUGGIFY's lasting effects end with the faults).
	Healed *bool
	// Recoveries is told the lines a broker logs when opening a log cut
	// something or fenced it (node.Env.Logf), for the recovery coverage
	// rows.
	Recoveries *siteCounter
	// Shares configures share groups (share.go; zero: Kafka's defaults).
	Shares node.ShareConfig
	// Balance turns on the controller's balancer (balance.go).
	Balance BalanceOptions
	// JoinVia, when set, is the initial broker whose Raft address a node
	// beyond the initial ones (join.go) names in --join; every node's
	// transport then resolves an address-only peer (resolvingNet).
	JoinVia int
}

// healedFunc is BrokerConfig.Healed as node.Env wants it (nil when unset).
func healedFunc(healed *bool) func() bool {
	if healed == nil {
		return nil
	}
	return func() bool { return *healed }
}

// optInSites is BrokerConfig.BuggifyOptIn as node.Env wants it (nil when
// empty).
func optInSites(names string) map[string]bool {
	var on map[string]bool
	for _, n := range strings.Fields(names) {
		if on == nil {
			on = map[string]bool{}
		}
		on[n] = true
	}
	return on
}

// BrokerFactory returns the Factory that boots a broker on every node. A
// broker that cannot start (its logs do not open) calls Env.Fatal with the
// reason, so the world records it and the node goes down again.
func BrokerFactory(bc BrokerConfig) Factory {
	// The brokers run on the world's one goroutine, so their logs share one
	// set of read buffers: a restarted broker's logs do not grow new ones.
	readBufs := new(logstore.ReadBuffers)
	images := new(group.Images) // the same: decoded consumer-group images
	peers := make([]node.Peer, bc.Nodes)
	for i := range peers {
		peers[i] = node.Peer{ID: int32(i + 1), RaftAddr: simRaftAddr(i + 1)}
	}
	return func(env Env) Instance {
		cfg := node.Config{
			NodeID:                 int32(env.ID),
			ClusterID:              "sim",
			KafkaHost:              fmt.Sprintf("n%d", env.ID),
			KafkaPort:              9092,
			RaftAddr:               simRaftAddr(int(env.ID)),
			Peers:                  peers,
			DataDir:                "data",
			TickInterval:           bc.Tick,
			ElectionTicks:          bc.ElectionTicks,
			HeartbeatTicks:         bc.HeartbeatTicks,
			DefaultReplication:     int16(partitionRF(bc.Nodes)),
			OffsetsTopicPartitions: bc.OffsetsPartitions,
			ForwardTimeout:         bc.ForwardTimeout,
			// No initial rebalance delay: the group members (members.go)
			// should see several generations in a few simulated seconds.
			Groups: group.Config{InitialRebalanceDelay: -1,
				ConsumerSessionTimeout: kip848Session, ConsumerHeartbeatInterval: kip848Interval},
			Shares: bc.Shares,
		}
		if int(env.ID) > bc.Nodes {
			// A broker beyond the initial voters, as `floe serve --join`
			// starts one: no --peers, one running broker's address.
			cfg.Peers, cfg.Join = nil, simRaftAddr(bc.JoinVia)
		}
		net := env.Net
		if bc.JoinVia != 0 {
			net = &resolvingNet{Transport: env.Net}
		}
		disk := &simDisk{sched: env.Sched, rng: rand.New(rand.NewSource(env.Rand.Int63())), cfg: bc, trace: env.Tracef}
		nenv := node.Env{
			Clock:     env.Clock,
			Sched:     env.Sched,
			FS:        tracedFS{env.FS, env.Tracef},
			Net:       net,
			Disk:      disk,
			Rand:      env.Rand,
			Logf:      recoveryLogs(env.Tracef, bc.Recoveries.hook()),
			Fatal:     env.Fatal,
			Buggify:   env.Buggify,
			OnBuggify: bc.Sites.hook(),

			BuggifyOptIn:  optInSites(bc.BuggifyOptIn),
			BuggifyHealed: healedFunc(bc.Healed),
			ReadBuffers:   readBufs,
			GroupImages:   images,
		}
		cfg.LeaseMargin = bc.LeaseMargin
		bc.configureBalance(int(env.ID), &cfg.Balancer, &cfg.BalancerMovesMax, &cfg.Rack)
		cfg.ControllerSnapshotEntries = bc.CtlSnapshotEntries
		cfg.MaintenanceTicks = bc.MaintenanceTicks
		cfg.SyncPipeline = bc.SyncPipeline
		if bc.Auth != nil {
			bc.Auth.configure(&cfg)
		}
		r := node.New(cfg, nenv)
		if err := r.Start(); err != nil {
			env.Fatal(fmt.Errorf("start: %w", err))
		}
		b := &Broker{R: r}
		if bc.Auth != nil {
			var err error
			if b.auth, err = bc.Auth.start(r, env); err != nil {
				env.Fatal(fmt.Errorf("sasl: %w", err))
			}
		}
		return b
	}
}

// simDisk is node.Disk on the simulator: a round of fsyncs completes after
// a seeded latency, and only then do its plans run (so a crash before the
// completion loses what they would have made durable). Sync failures come
// from the node's SimFS (SetFailProb, FailNext).
type simDisk struct {
	sched clock.Scheduler
	rng   *rand.Rand
	cfg   BrokerConfig
	trace func(string, ...any)
}

func (d *simDisk) Sync(plans []*logstore.SyncPlan, done func(err error)) {
	lat := d.cfg.DiskLatencyMin
	if span := d.cfg.DiskLatencyMax - d.cfg.DiskLatencyMin; span > 0 {
		lat += time.Duration(d.rng.Int63n(int64(span)))
	}
	if d.cfg.DiskSlowProb > 0 && d.rng.Float64() < d.cfg.DiskSlowProb {
		lat += d.cfg.DiskSlow
	}
	d.sched.After(lat, func() {
		var first error
		for _, p := range plans {
			if err := p.Run(); err != nil && first == nil {
				first = err
			}
		}
		if first != nil {
			d.trace("disk: sync of %d plans failed: %v", len(plans), first)
		}
		done(first)
	})
}

// recoveryLogs is tracef, also telling fn the lines that report a log
// recovery's cut or the fence it called for (node/replicas.go; only those
// are formatted twice).
func recoveryLogs(tracef func(string, ...any), fn func(string)) func(string, ...any) {
	if fn == nil {
		return tracef
	}
	return func(format string, args ...any) {
		tracef(format, args...)
		if strings.Contains(format, "recovery cut") || strings.Contains(format, "may have acknowledged") ||
			strings.Contains(format, "stepping down to be repaired") {
			fn(fmt.Sprintf(format, args...))
		}
	}
}
