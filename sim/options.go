package sim

import (
	"fmt"
	"math/rand"
	"strings"
	"time"

	"github.com/floe-broker/floe/netx"
)

// Options is everything one cluster run does. ChooseOptions draws them from
// a seed (swarm testing: each seed enables its own mix of faults at its own
// rates), so a seed names a run; tests and `floe sim` may then adjust them.
type Options struct {
	Seed int64

	// Cluster.
	Nodes      int
	Partitions int32
	Broker     BrokerConfig

	// Workload.
	Producers      int
	IdempotentProb float64 // chance each producer is idempotent
	RecordsMax     int     // records per produce, 1..RecordsMax
	Fetchers       int
	Consumers      int
	Groups         int // consumer groups the consumers share
	TxnProducers   int // transactional producers (txn.go); 0: none
	KIP848Members  int // members of the KIP-848 consumer group (kip848.go); 0: none
	KIP848Classic  int // classic members of the same group (kip848_classic.go); 0: none
	ThinkMax       time.Duration
	OpTimeout      time.Duration // a produce's delivery timeout
	RequestTimeout time.Duration // one request's client-side timeout
	ClientLatMin   time.Duration
	ClientLatMax   time.Duration

	// Phases.
	SafetyDur   time.Duration // faults and workload
	LivenessMax time.Duration // after healing: bound on leaders, writes, final reads

	Faults FaultOptions

	// Auth turns on SASL/SCRAM and ACLs, with the ACL workload (auth.go).
	Auth AuthOptions
	// Retention turns on the retention workload (retention.go).
	Retention RetentionOptions
	// Expiry turns on the producer-id expiry workload (expiry.go).
	Expiry ExpiryOptions
	// Bounce is the rate of leader transfers bounced straight back
	// (leasework.go), per simulated second; 0: none.
	Bounce float64
	// Topics turns on topic churn (topics.go): delete, re-create, grow.
	Topics bool
	// Balance turns on the controller's balancer (balance.go).
	Balance BalanceOptions
	// Quotas turns on the client-quota admin workload (quotas.go).
	Quotas bool

	// Join starts a broker with --join in the safety phase (join.go).
	Join JoinOptions

	// Knobs are randomized sizes (faults_more.go).
	Knobs knobs
	// Share is the share-group workload (share.go).
	Share ShareOptions

	// TraceKeep is how many trace lines the Result keeps (0: the last
	// 4,000; -1: all of them, for a replay written to a file).
	TraceKeep int

	// checkQuiet makes the invariants inspect in full every node they
	// would have refreshed (invariants.look) and fail the run where the
	// two views differ (a test of the shortcut).
	checkQuiet bool
	// checkBalanceSkips makes the balancer checks look at every broker
	// metadata they would have skipped as unchanged (observeBalance) and
	// fail the run where the look did anything.
	checkBalanceSkips bool
}

// CorruptRate is the rate of the corruption fault when a run forces it on
// (WithCorruption, -corrupt, --corrupt: every seed damages disks). By
// default each seed draws its own rate, zero in about half of them.
const CorruptRate = 0.5

// WithCorruption returns o with the disk corruption fault on at
// CorruptRate.
func (o Options) WithCorruption() Options {
	o.Faults.Corrupt = CorruptRate
	return o
}

// WithAllFaults returns o with every optional fault forced on: disk
// corruption, membership changes, disk replacement and the lying fsync
// (-all-faults, --all-faults).
func (o Options) WithAllFaults() Options {
	return o.WithCorruption().WithReassign().WithReplaceDisk().WithLying()
}

// LongMin and LongMax bound the safety phase of a long seed (WithLong).
const (
	LongMin = 60 * time.Second
	LongMax = 600 * time.Second
)

// WithLong returns o as a long seed: a safety phase of LongMin to LongMax
// simulated seconds, drawn from the seed (the event and traffic budgets
// that tell a livelock grow with it). Everything else is the seed's own.
func (o Options) WithLong() Options {
	rng := rand.New(rand.NewSource(o.Seed ^ 0x10c6))
	o.SafetyDur = LongMin + time.Duration(rng.Int63n(int64(LongMax-LongMin)+1))
	return o
}

// ReassignRate is the rate of membership changes when a run forces them on
// (WithReassign, -reassign, --reassign). By default each seed draws its
// own rate, zero in about half of them.
const ReassignRate = 0.8

// WithReassign returns o with membership changes (partition reassignment,
// and in a 5-node cluster a broker's decommission) on in every seed: at the
// rate the seed drew, or ReassignRate if it drew none.
func (o Options) WithReassign() Options {
	if o.Faults.Reassign == 0 {
		o.Faults.Reassign = ReassignRate
	}
	return o
}

// FaultOptions are the fault rates of a run. Rates are mean faults per
// simulated second; zero turns a fault off.
type FaultOptions struct {
	Crash     float64 // crash one node (seeded disk outcome), restart later
	PowerCut  float64 // crash a majority or every node at once
	Pause     float64 // SIGSTOP one node, resume later
	Partition float64 // isolate one, majority/minority, bridge, asymmetric
	Clock     float64 // skew or jump one node's wall clock
	Transfer  float64 // a node hands off every leadership it holds
	Reassign  float64 // move a partition to another replica set (membership change)
	Corrupt   float64 // flip bits in or truncate a file of a down node (a minority of each group)
	Voters    float64 // add or remove a controller voter (voters.go)
	// ReplaceDisk wipes a node's whole disk and restarts it under the same
	// id (replacedisk.go; about a third of the seeds draw it).
	ReplaceDisk float64
	// Aim is the chance a process fault or isolation targets a partition
	// leader or the controller instead of a random node.
	Aim float64
	// DurMax bounds how long a fault lasts before its heal.
	DurMax time.Duration
	// Link is every link's drop/duplicate/reorder/delay during the safety
	// phase.
	Link netx.LinkFaults
	// SyncFailProb and WriteFailProb make fsyncs and writes fail; a node
	// whose fsync fails stops (Env.Fatal) and is restarted.
	SyncFailProb  float64
	WriteFailProb float64
	// Buggify turns on fault sites inside product code (Env.Buggify).
	Buggify bool
	// More are the faults of faults_more.go.
	More moreFaultOptions
	// CutController, for tests only (no drawn seed sets it): the
	// corruption fault damages a controller log segment whenever the
	// target node's may be damaged, and always cuts it back (below its
	// recorded commit), so a test reaches a controller log cut below its
	// snapshot in a few seeds (fence_test.go).
	CutController bool
}

// DefaultSafety and friends are the defaults ChooseOptions starts from.
const (
	defaultSafety   = 3 * time.Second // to twice this
	defaultLiveness = 30 * time.Second
)

// ChooseOptions draws a run's options from its seed. The generator used here
// is not the world's: choosing options consumes nothing of the run itself.
func ChooseOptions(seed int64) Options {
	rng := rand.New(rand.NewSource(seed ^ 0x5eed0f7105))
	pick := func(p float64) bool { return rng.Float64() < p }
	rate := func(p, lo, hi float64) float64 {
		if !pick(p) {
			return 0
		}
		return lo + rng.Float64()*(hi-lo)
	}
	nodes := 3
	if pick(0.25) {
		nodes = 5
	}
	o := Options{
		Seed:       seed,
		Nodes:      nodes,
		Partitions: int32(1 + rng.Intn(2)),
		Broker: BrokerConfig{
			Nodes:             nodes,
			Tick:              10 * time.Millisecond,
			ElectionTicks:     10,
			HeartbeatTicks:    2,
			OffsetsPartitions: 1,
			ForwardTimeout:    2 * time.Second,
			DiskLatencyMin:    200 * time.Microsecond,
			DiskLatencyMax:    time.Duration(300+rng.Intn(1700)) * time.Microsecond,
		},
		Producers:      2 + rng.Intn(3),
		IdempotentProb: []float64{0, 0.5, 1}[rng.Intn(3)],
		RecordsMax:     1 + rng.Intn(3),
		Fetchers:       1 + rng.Intn(2),
		Consumers:      1 + rng.Intn(2),
		Groups:         1 + rng.Intn(2),
		ThinkMax:       time.Duration(5+rng.Intn(20)) * time.Millisecond,
		OpTimeout:      time.Duration(300+rng.Intn(3700)) * time.Millisecond,
		RequestTimeout: time.Duration(200+rng.Intn(800)) * time.Millisecond,
		ClientLatMin:   100 * time.Microsecond,
		ClientLatMax:   time.Duration(200+rng.Intn(800)) * time.Microsecond,
		SafetyDur:      defaultSafety + time.Duration(rng.Int63n(int64(defaultSafety))),
		LivenessMax:    defaultLiveness,
	}
	if pick(0.3) {
		o.Broker.DiskSlowProb, o.Broker.DiskSlow = 0.05, time.Duration(5+rng.Intn(45))*time.Millisecond
	}
	f := &o.Faults
	f.Crash = rate(0.6, 0.2, 3)
	f.PowerCut = rate(0.4, 0.1, 1)
	f.Pause = rate(0.5, 0.2, 2)
	f.Partition = rate(0.7, 0.2, 3)
	f.Clock = rate(0.4, 0.2, 2)
	f.Transfer = rate(0.3, 0.2, 2)
	if f.Crash+f.PowerCut+f.Pause+f.Partition+f.Clock+f.Transfer == 0 {
		f.Crash = rate(1, 0.2, 3) // every seed is a faulty one
	}
	f.Aim = rng.Float64()
	f.DurMax = time.Duration(200+rng.Intn(2800)) * time.Millisecond
	if pick(0.7) {
		f.Link = netx.LinkFaults{
			DropProb:    rate(0.6, 0.001, 0.1),
			DupProb:     rate(0.5, 0.001, 0.05),
			ReorderProb: rate(0.5, 0.001, 0.1),
		}
	}
	f.Link.DelayMin = 50 * time.Microsecond
	f.Link.DelayMax = time.Duration(100+rng.Intn(rng.Intn(5000)+1)) * time.Microsecond
	f.SyncFailProb = rate(0.2, 0.0005, 0.01)
	f.WriteFailProb = rate(0.1, 0.0005, 0.005)
	f.Buggify = pick(0.5)
	// Draws added later go last, so the options above stay what each seed
	// chose before them (regression and known-bug seeds keep their runs).
	f.Reassign = rate(0.5, 0.2, 1.5)
	f.Corrupt = rate(0.5, 0.2, 1)
	o.TxnProducers = 1 + rng.Intn(2)
	o.Auth = chooseAuth(seed) // its own generator
	o.KIP848Members = rng.Intn(4)
	// Share groups (issue 18): in 70% of the 3-node clusters, and since
	// h-share in half the 5-node ones (chooseWideShare, its own generator,
	// so no other draw moved), where the group's coordinator may hold no
	// replica of a partition (share.go).
	if nodes == 3 && pick(0.7) {
		o.Share = ShareOptions{Consumers: 2 + rng.Intn(2), DeliveryLimit: int16(2 + rng.Intn(3)),
			Lock: time.Duration(300+rng.Intn(700)) * time.Millisecond}
	} else if nodes != 3 {
		o.Share = chooseWideShare(seed)
	}
	o.Broker.Shares = o.Share.brokerShares()
	o.Retention = chooseRetention(seed)
	if o.Retention.Compact {
		// Compaction every 10 ticks, not 100: passes, and the second
		// passes that remove transaction markers, happen within the run
		// (txncompact.go).
		o.Broker.MaintenanceTicks = 10
	}
	o.Expiry = chooseExpiry(seed)
	o.Bounce = rate(0.5, 0.5, 3)
	o.Topics = chooseTopics(seed)
	chooseMore(rng, &o)             // last: faults_more.go
	o.Balance = chooseBalance(seed) // its own generator
	o.Broker.Balance = o.Balance
	o.KIP848Classic = chooseKIP848Classic(seed, o.KIP848Members)           // its own generator
	o.Quotas = chooseQuotas(seed)                                          // its own generator
	o.Faults.Voters = chooseVoters(seed)                                   // its own generator
	o.Faults.ReplaceDisk = chooseReplaceDisk(seed)                         // its own generator
	o.Join = chooseJoin(seed, o.SafetyDur, o.Nodes, o.Share.Consumers > 0) // its own generator
	o.Broker.JoinVia = o.Join.Via
	return o
}

// String lists the options, one group per line, for a failing run's report.
func (o Options) String() string {
	var b strings.Builder
	f := o.Faults
	fmt.Fprintf(&b, "seed=%d nodes=%d partitions=%d tick=%v election=%dt disk=%v..%v slow=%.2f/%v\n",
		o.Seed, o.Nodes, o.Partitions, o.Broker.Tick, o.Broker.ElectionTicks,
		o.Broker.DiskLatencyMin, o.Broker.DiskLatencyMax, o.Broker.DiskSlowProb, o.Broker.DiskSlow)
	fmt.Fprintf(&b, "workload: producers=%d idempotent=%.1f records<=%d fetchers=%d consumers=%d groups=%d think<=%v op-timeout=%v req-timeout=%v\n",
		o.Producers, o.IdempotentProb, o.RecordsMax, o.Fetchers, o.Consumers, o.Groups, o.ThinkMax, o.OpTimeout, o.RequestTimeout)
	fmt.Fprintf(&b, "phases: safety=%v liveness<=%v\n", o.SafetyDur, o.LivenessMax)
	fmt.Fprintf(&b, "faults/s: crash=%.2f powercut=%.2f pause=%.2f partition=%.2f clock=%.2f transfer=%.2f reassign=%.2f corrupt=%.2f aim=%.2f dur<=%v\n",
		f.Crash, f.PowerCut, f.Pause, f.Partition, f.Clock, f.Transfer, f.Reassign, f.Corrupt, f.Aim, f.DurMax)
	fmt.Fprintf(&b, "link: drop=%.3f dup=%.3f reorder=%.3f delay=%v..%v; disk: sync-fail=%.4f write-fail=%.4f; buggify=%v",
		f.Link.DropProb, f.Link.DupProb, f.Link.ReorderProb, f.Link.DelayMin, f.Link.DelayMax, f.SyncFailProb, f.WriteFailProb, f.Buggify)
	fmt.Fprintf(&b, "\n%s; lease-margin=%.2f heartbeat=%dt offsets-partitions=%d segment=%d fetch=%d",
		f.More, o.Broker.LeaseMargin, o.Broker.HeartbeatTicks, o.Broker.OffsetsPartitions, o.Knobs.SegmentBytes, o.Knobs.FetchBytes)
	if f.ReplaceDisk > 0 {
		fmt.Fprintf(&b, "\ndisk replacements/s: %.2f", f.ReplaceDisk)
	}
	if o.Share.Consumers > 0 {
		fmt.Fprintf(&b, "\nshare: consumers=%d delivery-limit=%d lock=%v", o.Share.Consumers, o.Share.DeliveryLimit, o.Share.Lock)
	}
	if o.Auth.On {
		fmt.Fprintf(&b, "\n%s", o.Auth)
	}
	if o.KIP848Members+o.KIP848Classic > 0 {
		fmt.Fprintf(&b, "\nkip848: members=%d classic=%d", o.KIP848Members, o.KIP848Classic)
	}
	if o.Bounce > 0 {
		fmt.Fprintf(&b, "\nbounced transfers/s: %.2f", o.Bounce)
	}
	if o.Topics {
		fmt.Fprintf(&b, "\ntopic churn: %s deleted, re-created and grown", churnTopic)
	}
	if o.Retention.On {
		fmt.Fprintf(&b, "\n%s", o.Retention)
	}
	if o.Expiry.On {
		fmt.Fprintf(&b, "\n%s", o.Expiry)
	}
	if n := o.Broker.CtlSnapshotEntries; n > 0 {
		fmt.Fprintf(&b, "\ncontroller snapshot every %d entries", n)
	}
	if o.Balance.On {
		fmt.Fprintf(&b, "\n%s", o.Balance)
	}
	if o.Quotas {
		fmt.Fprintf(&b, "\nclient quotas altered through any broker")
	}
	if o.Faults.Voters > 0 {
		fmt.Fprintf(&b, "\ncontroller voter changes/s: %.2f", o.Faults.Voters)
	}
	if o.Join.On() {
		fmt.Fprintf(&b, "\n%s", o.Join)
	}
	return b.String()
}

// chooseWideShare draws the share-group workload of a cluster of more than
// three brokers, from its own generator: in half of them.
func chooseWideShare(seed int64) ShareOptions {
	rng := rand.New(rand.NewSource(seed ^ 0x5a4e))
	if rng.Intn(2) != 0 {
		return ShareOptions{}
	}
	return ShareOptions{Consumers: 2 + rng.Intn(2), DeliveryLimit: int16(2 + rng.Intn(3)),
		Lock: time.Duration(300+rng.Intn(700)) * time.Millisecond}
}
