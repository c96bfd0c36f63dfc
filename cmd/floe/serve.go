package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/quota"
	"github.com/floe-broker/floe/node/runtime"
)

// defaultDataDir is where `floe serve` keeps its logs when --data-dir is not
// given: a directory in the current working directory, so `make run` in a
// checkout keeps its data beside it (and .gitignore ignores it).
const defaultDataDir = "floe-data"

func init() { addCommand("serve", "run a broker", runServe) }

// stageSampleOption maps --produce-stage-sample to
// runtime.Options.ProduceStageSample, where 0 means the default and a
// negative value off.
func stageSampleOption(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

func runServe(args []string) error {
	fs := flag.NewFlagSet("floe serve", flag.ContinueOnError)
	dataDir := fs.String("data-dir", defaultDataDir, "directory holding the logs")
	kafkaAddr := fs.String("kafka-addr", defaultKafkaAddr, "Kafka protocol listen address")
	adminAddr := fs.String("admin-addr", "127.0.0.1:9644", "HTTP address for /metrics, /healthz, /readyz (empty disables)")
	advertise := fs.String("advertise-kafka-addr", "", "Kafka address clients are told to use (default: --kafka-addr)")
	nodeID := fs.Int("node-id", 1, "this broker's id (> 0)")
	raftAddr := fs.String("raft-addr", "", "peer listen address for replication (cluster mode)")
	advertiseRaft := fs.String("advertise-raft-addr", "", "peer address other brokers use (default: --raft-addr)")
	peers := fs.String("peers", "", "initial controller voters: `1@host:port,2@host:port,...`")
	join := fs.String("join", "", "raft address of a running broker, to join its cluster")
	rack := fs.String("rack", "", "rack (failure domain) of this broker")
	balancer := fs.String("balancer", "count", "continuous balancing by the controller's leader: off; count (replicas, then preferred leaders, per broker); or load (count, then bytes on disk per broker, with hysteresis)")
	balancerMoves := fs.Int("balancer-moves", 4, "most reassignments in flight at once for the balancer to start another (>= 1)")
	replicaLag := fs.Duration("replica-lag-time-max", node.DefaultReplicaLagMax, "a replica is in sync (Metadata's ISR, the under-replicated metrics, floe cluster rolling-restart-check) while it has caught up with its leader's log within this long: Kafka's replica.lag.time.max.ms")
	moveRate := fs.Int64("balancer-move-rate-bytes", 0, "bytes per second of log a partition's leader sends each replica a reassignment adds (the balancer's or an operator's), like Kafka's leader.replication.throttled.rate but per moving replica; 0: no limit")
	autoCreate := fs.Bool("auto-create-topics", true, "create unknown topics on Metadata requests")
	partitions := fs.Int("default-partitions", 1, "partitions of auto-created topics")
	replication := fs.Int("default-replication-factor", 0, "replication factor of new topics (0: min(3, brokers))")
	offsetsPartitions := fs.Int("offsets-topic-partitions", 16, "partitions of __consumer_offsets")
	groupCfg := addGroupFlags(fs)
	shareCfg := addShareFlags(fs)
	telemetryCfg := addTelemetryFlags(fs)
	security := addAuthzFlags(fs)
	maxRequest := fs.Int("max-request-bytes", 100<<20, "largest Kafka request accepted")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	stageSample := fs.Int("produce-stage-sample", runtime.ProduceStageSampleDefault, "break one produce request in every N down into stages for floe_produce_stage_seconds on /metrics (0 turns it off)")
	listeners := fs.String("listeners", "", "Kafka listeners `NAME://host:port,...` (names PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL, or any name in --listener-security-protocol-map); replaces --kafka-addr")
	protoMap := fs.String("listener-security-protocol-map", "", "listener name to security protocol: `NAME:PROTOCOL,...`")
	advListeners := fs.String("advertised-listeners", "", "addresses clients are told to use, per listener: `NAME://host:port,...` (default: the listen addresses)")
	quotaWindows := fs.Int("quota-window-num", quota.DefaultSamples, "samples kept to measure a client's byte rate against its quota (Kafka's quota.window.num, 2-1000)")
	quotaWindow := fs.Duration("quota-window-size", quota.DefaultWindow, "length of one quota sample (Kafka's quota.window.size.seconds, 10ms-1h)")
	electionTimeout := fs.Duration("raft-election-timeout", node.DefaultElectionTimeout, "Raft's minimum election timeout (each one is drawn from [t, 2t)): a follower that hears nothing from its leader for that long campaigns; a multiple of the 50ms tick, at least 150ms")
	syncPipeline := fs.Int("fsync-pipeline", 2, "rounds of group-commit fsyncs in flight at once: 2 (a write arriving while a round runs starts the next one at once) or 1 (one round at a time)")
	secFlags := addSecurityFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *syncPipeline != 1 && *syncPipeline != 2 {
		return fmt.Errorf("--fsync-pipeline %d: want 1 or 2", *syncPipeline)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if *nodeID <= 0 || *nodeID > 1<<30 {
		return fmt.Errorf("--node-id must be a positive integer, got %d", *nodeID)
	}
	plan, err := serveListeners(*listeners, *protoMap, *advListeners, *kafkaAddr, *advertise)
	if err != nil {
		return err
	}
	sec, err := secFlags.security()
	if err != nil {
		return err
	}
	superUsers, err := parseSuperUsers(*secFlags.superUsers)
	if err != nil {
		return err
	}
	var bootstrap []controller.User
	if *secFlags.bootstrapUsers != "" {
		if bootstrap, err = readBootstrapUsers(*secFlags.bootstrapUsers); err != nil {
			return err
		}
	}
	balanceMode, err := controller.ParseBalanceMode(*balancer)
	if err != nil {
		return err
	}
	if *quotaWindows < 2 || *quotaWindows > 1000 {
		return fmt.Errorf("--quota-window-num must be between 2 and 1000, got %d", *quotaWindows)
	}
	if *quotaWindow < 10*time.Millisecond || *quotaWindow > time.Hour {
		return fmt.Errorf("--quota-window-size must be between 10ms and 1h, got %v", *quotaWindow)
	}
	if *balancerMoves < 1 || *balancerMoves > 1000 {
		return fmt.Errorf("--balancer-moves must be between 1 and 1000, got %d", *balancerMoves)
	}
	if *moveRate < 0 {
		return fmt.Errorf("--balancer-move-rate-bytes must be 0 (no limit) or a positive number of bytes per second, got %d", *moveRate)
	}
	if *replicaLag < 100*time.Millisecond || *replicaLag > 24*time.Hour {
		return fmt.Errorf("--replica-lag-time-max must be between 100ms and 24h, got %v", *replicaLag)
	}
	if err := checkElectionTimeout(*electionTimeout); err != nil {
		return err
	}
	peerList, err := parsePeers(*peers)
	if err != nil {
		return fmt.Errorf("--peers: %v", err)
	}
	if (len(peerList) > 0 || *join != "") && *raftAddr == "" {
		return fmt.Errorf("--raft-addr is required with --peers or --join")
	}
	advRaft := *advertiseRaft
	if advRaft == "" {
		advRaft = *raftAddr
	}
	secCfg, err := security.config(superUsers)
	if err != nil {
		return err
	}
	opts := runtime.Options{
		DataDir: *dataDir, Listeners: plan.listen, Security: sec, AdminAddr: *adminAddr, RaftAddr: *raftAddr,
		MaxRequestBytes: int32(*maxRequest), Logger: logger, AuditLogFile: *security.auditFile,
		ProduceStageSample: stageSampleOption(*stageSample),
		Quotas:             quota.Config{Samples: *quotaWindows, Window: *quotaWindow},
		Node: node.Config{
			NodeID: int32(*nodeID), KafkaHost: plan.advertise[0].Host, KafkaPort: plan.advertise[0].Port,
			Listeners: plan.advertise, BootstrapUsers: bootstrap, RaftAddr: advRaft, Rack: *rack,
			Peers: peerList, Join: *join, AutoCreateTopics: *autoCreate,
			DefaultPartitions: int32(*partitions), DefaultReplication: int16(*replication),
			OffsetsTopicPartitions: int32(*offsetsPartitions), Groups: groupCfg(), Security: secCfg,
			Shares: shareCfg(), Telemetry: telemetryCfg(),
			Balancer: balanceMode, BalancerMovesMax: *balancerMoves, MoveRateBytes: *moveRate, ReplicaLagMax: *replicaLag,
			SyncPipeline:  *syncPipeline,
			ElectionTicks: int(*electionTimeout / node.DefaultTickInterval),
		},
	}
	b, err := runtime.Start(opts)
	if err != nil {
		return err
	}
	var bound []string
	for _, l := range plan.listen {
		bound = append(bound, l.Name+"://"+b.ListenerAddr(l.Name))
	}
	logger.Info("floe serving", "kafka", b.KafkaAddr(), "listeners", strings.Join(bound, ","), "admin", b.AdminAddr(),
		"raft", b.RaftAddr(), "data", *dataDir, "node", *nodeID)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		logger.Info("shutting down", "signal", s.String())
	case err := <-b.Fatal():
		_ = b.Shutdown(context.Background())
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return b.Shutdown(ctx)
}

// defaultKafkaAddr is --kafka-addr's default.
const defaultKafkaAddr = "127.0.0.1:9092"

// serveListeners resolves the listener flags: --listeners (with the
// protocol map and --advertised-listeners), or the one PLAINTEXT listener
// of --kafka-addr advertised as --advertise-kafka-addr.
func serveListeners(listeners, protoMap, advertised, kafkaAddr, advertise string) (listenerPlan, error) {
	if listeners != "" {
		if kafkaAddr != defaultKafkaAddr || advertise != "" {
			return listenerPlan{}, usagef("give --listeners (with --advertised-listeners) or --kafka-addr (with --advertise-kafka-addr), not both")
		}
		return planListeners(listeners, protoMap, advertised)
	}
	if protoMap != "" || advertised != "" {
		return listenerPlan{}, usagef("--listener-security-protocol-map and --advertised-listeners need --listeners")
	}
	adv := advertise
	if adv == "" {
		adv = kafkaAddr
	}
	host, port, err := runtime.SplitHostPort(adv)
	if err != nil {
		return listenerPlan{}, fmt.Errorf("--advertise-kafka-addr: %v", err)
	}
	return listenerPlan{
		listen:    []runtime.Listener{{Name: runtime.ProtocolPlaintext, Protocol: runtime.ProtocolPlaintext, Addr: kafkaAddr}},
		advertise: []controller.Endpoint{{Name: runtime.ProtocolPlaintext, Host: host, Port: port}},
	}, nil
}

func parsePeers(s string) ([]node.Peer, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []node.Peer
	seen := map[int32]bool{}
	for _, part := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(part), "@")
		if !ok {
			return nil, fmt.Errorf("%q: want id@host:port", part)
		}
		n, err := strconv.Atoi(id)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q: bad node id", part)
		}
		if _, _, err := runtime.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("%q: %v", part, err)
		}
		if seen[int32(n)] {
			return nil, fmt.Errorf("node id %d listed twice", n)
		}
		seen[int32(n)] = true
		out = append(out, node.Peer{ID: int32(n), RaftAddr: addr})
	}
	return out, nil
}

// checkElectionTimeout refuses a --raft-election-timeout Raft cannot use:
// outside 150ms..1m, or not a whole number of ticks (it would be cut to
// one silently).
func checkElectionTimeout(d time.Duration) error {
	if d < 150*time.Millisecond || d > time.Minute {
		return fmt.Errorf("--raft-election-timeout must be between 150ms and 1m, got %v", d)
	}
	if d%node.DefaultTickInterval != 0 {
		return fmt.Errorf("--raft-election-timeout must be a multiple of the %v tick, got %v", node.DefaultTickInterval, d)
	}
	return nil
}
