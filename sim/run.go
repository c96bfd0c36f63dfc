package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/internal/assert"
	"github.com/floe-broker/floe/jepsen/check"
	"github.com/floe-broker/floe/jepsen/history"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
)

// A cluster run: Options in, Result out. Run boots Options.Nodes full
// brokers in a World, creates the workload topic, then
//
//  1. safety phase (SafetyDur): producers, fetchers and consumers run while
//     the nemesis injects the seed's faults;
//  2. heal: faults stop, everything heals, producers and fetchers finish
//     their operations in flight;
//  3. liveness phase (LivenessMax from the heal): every partition must
//     accept an acks=all write, be read in full (the final reads), and
//     every consumer must drain it and commit;
//  4. the history goes through every shared checker (jepsen/check).
//
// Everything derives from Options.Seed, so a run replays bit for bit.

// Result is what a run found.
type Result struct {
	Options Options
	// Violations fail the run, one line each: checker anomalies and
	// inconclusive checks, liveness failures, served corruption,
	// unexpected node failures.
	Violations []string
	// Known are the known bugs (known.go) the run showed; they do not fail
	// it. Notes are things worth a look that do not fail it either.
	Known  []string
	Notes  []string
	Report check.Report
	Stats  RunStats
	// TraceHash is the SHA-256 of the whole trace; Trace its last lines
	// (Options.TraceKeep).
	TraceHash string
	Trace     []string
	History   history.History
	// Coverage counts the rare paths the run reached (coverage.go).
	Coverage map[string]int
}

// RunStats are a run's figures.
type RunStats struct {
	SimTime  time.Duration
	Events   uint64
	Produces int
	Acked    int
	Fetches  int
	Polls    int
	Commits  int
	Faults   string // by kind
	Fatals   int
	// Moves counts the workload topic's partitions whose membership walk
	// (a reassignment, a decommission's evacuation, a cancellation)
	// completed and was recorded by the controller (membership.go).
	Moves int
	// Recovery is, per partition, the simulated time from the heal to its
	// first acknowledged acks=all write.
	Recovery []time.Duration
}

// Failed reports whether the run found a violation.
func (res *Result) Failed() bool { return len(res.Violations) > 0 }

// ReplayCommands are the commands that rerun this seed bit for bit.
func (res *Result) ReplayCommands() string {
	test, cli := "", ""
	if res.Options.Faults.Corrupt != ChooseOptions(res.Options.Seed).Faults.Corrupt {
		test, cli = test+" -corrupt", cli+" --corrupt" // forced on, not the seed's own draw
	}
	if res.Options.Faults.ReplaceDisk != ChooseOptions(res.Options.Seed).Faults.ReplaceDisk {
		test, cli = test+" -replace-disk", cli+" --replace-disk" // forced on, not the seed's own draw
	}
	if res.Options.Faults.Reassign != ChooseOptions(res.Options.Seed).Faults.Reassign {
		test, cli = test+" -reassign", cli+" --reassign"
	}
	if m := res.Options.Faults.More; m.LyingSync != ChooseOptions(res.Options.Seed).Faults.More.LyingSync && !m.LieAll {
		test, cli = test+" -lying", cli+" --lying" // forced on, not the seed's own draw
	}
	if res.Options.Join != ChooseOptions(res.Options.Seed).Join {
		test, cli = test+" -join", cli+" --join"
	}
	if res.Options.SafetyDur >= LongMin {
		test, cli = test+" -long", cli+" --long"
	}
	if res.Options.Auth.On && !ChooseOptions(res.Options.Seed).Auth.On { // forced on (WithAuth)
		return fmt.Sprintf("go test ./sim -run '^TestSimAuth$' -seed %d%s -v\n\tgo run ./cmd/floe sim --seed %d%s --auth",
			res.Options.Seed, test, res.Options.Seed, cli)
	}
	return fmt.Sprintf("go test ./sim -run '^TestSim$' -seed %d%s -v\n\tgo run ./cmd/floe sim --seed %d%s",
		res.Options.Seed, test, res.Options.Seed, cli)
}

// Summary is the report of a run: verdict, seed, options, figures, the
// violations with the checker summary, and how to replay it.
func (res *Result) Summary() string {
	var b strings.Builder
	verdict := "PASS"
	if res.Failed() {
		verdict = "FAIL"
	}
	s := res.Stats
	fmt.Fprintf(&b, "%s seed %d: %v simulated, %d events; produces=%d acked=%d fetches=%d polls=%d commits=%d fatals=%d\n",
		verdict, res.Options.Seed, s.SimTime, s.Events, s.Produces, s.Acked, s.Fetches, s.Polls, s.Commits, s.Fatals)
	fmt.Fprintf(&b, "faults: %s; membership moves completed: %d; recovery after heal: %v\n", s.Faults, s.Moves, s.Recovery)
	fmt.Fprintf(&b, "options:\n\t%s\n", strings.ReplaceAll(res.Options.String(), "\n", "\n\t"))
	for _, v := range res.Violations {
		fmt.Fprintf(&b, "VIOLATION %s\n", v)
	}
	for _, k := range res.Known {
		fmt.Fprintf(&b, "%s\n", k)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if res.Failed() {
		fmt.Fprintf(&b, "checkers:\n%s", res.Report.Summary())
		fmt.Fprintf(&b, "trace hash %s; replay with:\n\t%s\n", res.TraceHash, res.ReplayCommands())
	}
	return b.String()
}

// run is one run in progress: the world, the clients' shared state, the
// history.
type run struct {
	w    *World
	o    Options
	rng  *rand.Rand // the workload's choices
	kn   *kafkaNet
	meta *metaCache
	// balance is what the balancer checks remember (balance.go).
	balance balanceSeen
	rec     *history.Recorder
	nem     *nemesis
	// auth is the ACL workload of a run with authentication (authwork.go).
	auth *aclWork
	inv  *invariants // white-box checks (invariants.go)

	topic    string
	values   int64
	procNext int64
	// maxEpoch is, per "topic/partition", the largest leader epoch a probe
	// saw (known.go).
	maxEpoch map[string]int32
	// topOffset is, per partition, the largest high watermark or
	// acknowledged end offset seen: fetchers pick offsets below it.
	topOffset map[int32]int64

	// healed is BrokerConfig.Healed: set at the heal, for the brokers.
	healed *bool
	// stopping: producers and fetchers finish their operation and stop;
	// active counts those still running.
	stopping bool
	active   int
	// draining: consumers read to finalHWM and commit; drainedConsumers
	// counts those done.
	draining         bool
	finalHWM         map[int32]int64
	drainedConsumers int
	// liveDeadline bounds the liveness phase's retries.
	liveDeadline time.Duration

	// halted: the run used up its event budget (eventsMax): the simulation
	// stopped making progress in simulated time, a livelock.
	halted bool
	// sameInstant counts events run since simulated time last moved.
	sameInstant int
	lastInstant time.Duration

	txn *txnWorkload // the transactional workload (txn.go), if any
	// share is the share-group workload (share.go), if any.
	share  *shareWork
	ret    *retWorkload // the retention workload (retention.go), if any
	txc    *txcWorkload // transactions on a compacted topic (txncompact.go), if any
	exp    *expWorkload // the producer-id expiry workload (expiry.go), if any
	churn  *churn       // topic churn (topics.go), if any
	quotas *quotaWork   // client-quota changes (quotas.go), if any
	// coverage counts the rare paths the run reached (coverage.go).
	coverage map[string]int
	// fencedViews and snapshotViews count views showing a vote fence and
	// a log behind a snapshot (coverSteady).
	fencedViews, snapshotViews int

	corruptedFiles []string
	// replacedDisks counts the disks the replace-disk fault wiped.
	replacedDisks int
	// joined is the broker the join fault started (join.go; 0: none yet),
	// joinedAt when, joinedSeen whether it has seen itself registered.
	joined     netx.NodeID
	joinedAt   time.Duration
	joinedSeen bool
	violations []string
	knownSeen  []string
	notes      []string
	stats      RunStats
}

// eventsMax bounds a run's events, and sameInstantMax the events at one
// simulated instant. A healthy run takes tens of thousands of events, and
// a few dozen at one instant; one past either bound is spinning. The
// heaviest healthy seeds (5 nodes, every workload, an 8 ms tick with a
// heartbeat each tick, pauses and moves in the safety phase) take up to
// about 100,000 events a simulated second before the heal and 401,352 in
// all (--all-faults seed 2406310, which failed a budget of 400,000 while
// its liveness checks were still passing one by one), so the bound leaves
// more than twice that; a cluster that does not settle still fails the
// liveness phase's deadline.
const (
	eventsMax      = 1_000_000
	sameInstantMax = 20_000
	// deliveredBytesMax bounds the peer traffic of a run (healthy runs
	// move tens of megabytes): a storm of large messages is a livelock
	// too, and a slow one.
	deliveredBytesMax = 1 << 30
)

// budgetScale scales the event and traffic budgets with the safety phase:
// 1 for the default 3-6 s, proportionally more for a long seed.
func (r *run) budgetScale() int64 {
	return max(1, int64(r.o.SafetyDur/(2*defaultSafety)))
}

// runUntil is World.RunUntil within the run's event budget.
func (r *run) runUntil(pred func() bool, maxWait time.Duration) bool {
	ok := r.w.RunUntil(func() bool { return r.exhausted() || pred() }, maxWait)
	return ok && !r.halted
}

// runFor runs d of simulated time within the event budget.
func (r *run) runFor(d time.Duration) { r.runUntil(func() bool { return false }, d) }

func (r *run) exhausted() bool {
	if r.halted {
		return true
	}
	if now := r.now(); now != r.lastInstant {
		r.lastInstant, r.sameInstant = now, 0
		r.inv.observe()
		r.observeBalance()
	}
	r.sameInstant++
	switch {
	case r.sameInstant > sameInstantMax:
		r.halted = true
		r.violation("livelock", fmt.Sprintf("%d events at simulated instant %v: the cluster spins without time passing", r.sameInstant, r.now()))
	case r.w.DeliveredBytes() >= deliveredBytesMax*r.budgetScale():
		r.halted = true
		r.violation("livelock", fmt.Sprintf("%d bytes of peer messages by %v simulated: a message storm", r.w.DeliveredBytes(), r.now()))
	case r.w.Clock().Executed() >= eventsMax*uint64(r.budgetScale()):
		r.halted = true
		r.violation("livelock", fmt.Sprintf("%d events by %v simulated: the run never settles", eventsMax*uint64(r.budgetScale()), r.now()))
	}
	return r.halted
}

func (r *run) now() time.Duration { return r.w.Clock().Monotonic() }

func (r *run) newProc() int64 {
	r.procNext++
	return r.procNext
}

// think is a client's pause between operations.
func (r *run) think() time.Duration {
	return time.Duration(r.rng.Int63n(int64(r.o.ThinkMax) + 1))
}

// backoff is a client's pause before a retry.
func (r *run) backoff() time.Duration {
	return 10*time.Millisecond + time.Duration(r.rng.Int63n(int64(40*time.Millisecond)))
}

func (r *run) sawOffset(part int32, off int64) {
	r.topOffset[part] = max(r.topOffset[part], off)
}

func (r *run) violation(kind, msg string) {
	r.w.Tracef("VIOLATION %s: %s", kind, msg)
	r.violations = append(r.violations, kind+": "+msg)
}

// known records that the run shows a known bug (known.go).
func (r *run) known(name, detail string) {
	r.w.Tracef("%s", knownLine(name, detail))
	for _, k := range r.knownSeen {
		if strings.HasPrefix(k, knownLine(name, "")) {
			return
		}
	}
	r.knownSeen = append(r.knownSeen, knownLine(name, detail))
}

func (r *run) note(msg string) {
	r.w.Tracef("note: %s", msg)
	if len(r.notes) < 20 {
		r.notes = append(r.notes, msg)
	}
}

// Run runs one simulated cluster as o says and checks its history.
// Assertions (internal/assert) are on: a violated invariant panics the
// seed.
func Run(o Options) *Result {
	assert.Enable()
	keep := o.TraceKeep
	switch {
	case keep == 0:
		keep = 4000
	case keep < 0:
		keep = 0 // the world keeps all
	}
	bc, ba, cache := authBrokerConfig(o)
	var r *run
	bc.Sites = &siteCounter{fn: func(site string) { // sites firing at boot, before r, go uncounted
		if r != nil {
			r.cover(buggifyCoverage + site)
		}
	}}
	bc.Healed = new(bool)
	bc.Recoveries = &siteCounter{fn: func(line string) { // logs at boot, before r, go uncounted
		if r != nil {
			r.coverRecovery(line)
		}
	}}
	w := NewWorld(Config{
		Seed: o.Seed, Nodes: o.Nodes, Buggify: o.Faults.Buggify, TraceKeep: keep,
		Faults: netx.LinkFaults{DelayMin: o.Faults.Link.DelayMin, DelayMax: o.Faults.Link.DelayMax},
	}, BrokerFactory(bc))
	r = &run{
		w: w, o: o, healed: bc.Healed, topic: "sim", topOffset: map[int32]int64{}, finalHWM: map[int32]int64{}, maxEpoch: map[string]int32{},
		rng: rand.New(rand.NewSource(w.Rand().Int63())),
	}
	r.kn = &kafkaNet{w: w, rng: rand.New(rand.NewSource(w.Rand().Int63())),
		latMin: o.ClientLatMin, latMax: o.ClientLatMax, calls: map[int16]int{}}
	r.meta = newMetaCache(r)
	r.rec = history.NewRecorder(nil, func() int64 { return int64(w.Clock().Monotonic()) })
	r.nem = newNemesis(r)
	if ba != nil {
		r.auth = newACLWork(r, ba, cache)
	}
	r.inv = newInvariants(r)
	w.Tracef("options %s", strings.ReplaceAll(o.String(), "\n", "; "))
	if r.setup() && (r.auth == nil || r.auth.setup()) {
		r.safety()
		if !r.halted {
			r.heal()
		}
		if !r.halted {
			r.liveness()
		}
		if !r.halted {
			r.awaitBalance()
		}
		if !r.halted {
			r.checkJoin() // join.go
		}
		if !r.halted {
			r.checkVoters() // voters.go
		}
		if r.auth != nil && !r.halted {
			r.auth.final()
		}
		if !r.halted {
			r.inv.afterHeal()
		}
	}
	return r.finish()
}

// setup creates the topic on a healthy cluster and waits for its leaders.
func (r *run) setup() bool {
	w := r.w
	created := false
	var create func()
	create = func() {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = 7
		req.TimeoutMillis = 5000
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = r.topic, r.o.Partitions, int16(min(3, r.o.Nodes))
		segment := fmt.Sprint(cmp.Or(r.o.Knobs.SegmentBytes, 16384))
		for _, c := range [][2]string{{"retention.ms", "-1"}, {"retention.bytes", "-1"}, {"segment.bytes", segment}} {
			cc := kmsg.NewCreateTopicsRequestTopicConfig()
			cc.Name, cc.Value = c[0], kmsg.StringPtr(c[1])
			t.Configs = append(t.Configs, cc)
		}
		req.Topics = append(req.Topics, t)
		r.kn.call(r.meta.anyNode(), req, 6*time.Second, func(resp kmsg.Response, err error) {
			if err == nil {
				code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
				if code == 0 || code == kerr.TopicAlreadyExists.Code {
					created = true
					return
				}
			}
			w.After(100*time.Millisecond, create)
		})
	}
	w.After(50*time.Millisecond, create)
	if !r.runUntil(func() bool { return created }, 30*time.Second) {
		r.violation("liveness", "a healthy cluster did not create the topic within 30s")
		return false
	}
	if !r.waitLeaders(30 * time.Second) {
		r.violation("liveness", "a healthy cluster's new topic has no leader for every partition within 30s")
		return false
	}
	if !r.createSkewed() {
		return false
	}
	w.Tracef("setup done: topic %s has %d partitions with leaders", r.topic, r.o.Partitions)
	return true
}

// waitLeaders refreshes metadata until every partition has a leader.
func (r *run) waitLeaders(max time.Duration) bool {
	known := func() bool { return len(r.meta.leaders) == int(r.o.Partitions) }
	var poll func()
	poll = func() {
		if !known() {
			r.meta.refresh(func() { r.w.After(50*time.Millisecond, poll) })
		}
	}
	poll()
	return r.runUntil(known, max)
}

// safety runs the workload under the nemesis for SafetyDur.
func (r *run) safety() {
	r.w.Tracef("phase: safety for %v", r.o.SafetyDur)
	for i := 0; i < r.o.Producers; i++ {
		p := &producer{r: r, idem: r.rng.Float64() < r.o.IdempotentProb}
		p.start()
	}
	// In half the runs without authentication (the pipelined producer
	// sends no credentials), one more producer pipelines its batches
	// (pipeproduce.go).
	if r.auth == nil && r.rng.Intn(2) == 0 {
		r.startPipeProducer()
	}
	for i := 0; i < r.o.Fetchers; i++ {
		(&fetcher{r: r}).start()
	}
	for i := 0; i < r.o.Consumers; i++ {
		c := &consumer{r: r, group: fmt.Sprintf("g%d", i%max(r.o.Groups, 1))}
		c.start()
	}
	r.startTxn()
	r.startKIP848()
	r.startShare()
	r.startRetention()
	r.startTxnCompact()
	r.startExpiry()
	r.startBounce()
	r.startChurn()
	r.startQuotas()
	if r.auth != nil {
		r.auth.start()
	}
	r.startProbes()
	r.nem.start()
	r.startJoin()
	r.runFor(r.o.SafetyDur)
}

// heal stops the faults and lets producers and fetchers finish.
func (r *run) heal() {
	r.nem.stop()
	*r.healed = true // BUGGIFY's lasting effects end too (node.Env.BuggifyHealed)
	r.stopping = true
	r.liveDeadline = r.now() + r.o.LivenessMax
	r.w.Tracef("phase: heal; waiting for %d clients to finish their operations", r.active)
	if !r.runUntil(func() bool { return r.active == 0 }, r.o.OpTimeout+2*r.o.RequestTimeout) {
		r.note(fmt.Sprintf("%d clients still busy after the heal", r.active))
	}
}

// liveness: each partition must take an acks=all write and be read in full,
// and every consumer must drain, all before liveDeadline.
func (r *run) liveness() {
	healAt := r.now()
	r.w.Tracef("phase: liveness, deadline %v", r.liveDeadline)
	r.stats.Recovery = make([]time.Duration, r.o.Partitions)
	probed, read := 0, 0
	readsOK := true
	for p := int32(0); p < r.o.Partitions; p++ {
		r.probe(p, healAt, func() {
			probed++
			r.finalRead(p, func(ok bool, hwm int64) {
				read++
				readsOK = readsOK && ok
				r.finalHWM[p] = hwm
			})
		})
	}
	left := r.liveDeadline - r.now()
	if !r.runUntil(func() bool { return read == int(r.o.Partitions) }, left) {
		r.violation("liveness", fmt.Sprintf("%d of %d partitions took an acks=all write and %d were read in full within %v of the heal",
			probed, r.o.Partitions, read, r.o.LivenessMax))
		return
	}
	if !readsOK {
		r.violation("liveness", fmt.Sprintf("final reads did not complete within %v of the heal", r.o.LivenessMax))
		return
	}
	r.draining = true
	left = r.liveDeadline - r.now()
	if !r.runUntil(func() bool { return r.drainedConsumers == r.o.Consumers }, left) {
		r.violation("liveness", fmt.Sprintf("%d of %d consumers drained and committed within %v of the heal",
			r.drainedConsumers, r.o.Consumers, r.o.LivenessMax))
	}
	r.finishTxn()
	r.finishShare()
	r.finishRetention()
	r.finishTxnCompact()
	r.finishExpiry()
	r.finishChurn()
	r.finishQuotas()
}

// probe writes to partition part until a write is acknowledged (or the
// liveness deadline passes), then calls done.
func (r *run) probe(part int32, healAt time.Duration, done func()) {
	proc := r.newProc()
	var try func()
	try = func() {
		r.produceOp(proc, part, 1, producerStamp{pid: -1}, func(typ history.Type) {
			if typ == history.OK {
				r.stats.Recovery[part] = r.now() - healAt
				done()
				return
			}
			proc = r.newProc()
			if r.now() < r.liveDeadline {
				r.w.After(r.backoff(), try)
			}
		})
	}
	try()
}

// finish checks the history and gathers the result.
func (r *run) finish() *Result {
	w := r.w
	h := r.rec.History()
	r.inv.deposedReads(h)
	rep := check.Check(h, check.Options{})
	checkFailed := rep.Valid != check.Valid
	if findKnown(staleReads) != nil {
		if known, stale := classifyKnown(h, rep); known {
			r.known(staleReads, fmt.Sprintf("%d reads answered by deposed leaders explain every checker anomaly", stale))
			checkFailed = false
		}
	}
	for _, res := range rep.Results {
		if !checkFailed || res.Valid == check.Valid {
			continue
		}
		line := fmt.Sprintf("%s %s", res.Checker, res.Valid)
		for _, name := range sortedStrings(res.Counts) {
			line += fmt.Sprintf(" %s=%d", name, res.Counts[name])
		}
		for _, n := range res.Notes {
			line += "; " + n
		}
		r.violation("checker", line)
	}
	for _, f := range w.Fatals() {
		switch {
		case injected(f.Err):
		case knownFatal(f.Err):
			r.known("log-creation-not-crash-atomic", fmt.Sprintf("n%d.%d cannot start: %v", f.ID, f.Inc, f.Err))
		default:
			// A node with damaged files must repair them from its peers,
			// not stop: that is a failure too.
			r.violation("node-fatal", fmt.Sprintf("n%d.%d stopped with no injected cause at %v: %v", f.ID, f.Inc, f.At, f.Err))
		}
	}
	if len(r.corruptedFiles) > 0 {
		r.note("corrupted: " + strings.Join(r.corruptedFiles, ", "))
	}
	r.coverStats()
	r.coverMore()
	r.stats.SimTime = w.Clock().Monotonic()
	r.stats.Events = w.Clock().Executed()
	r.stats.Faults = r.nem.summary()
	r.stats.Fatals = len(w.Fatals())
	r.stats.Moves = r.membershipMoves()
	if len(r.violations) > 0 {
		r.traceReplicas()
	}
	w.Tracef("done: %d violations", len(r.violations))
	return &Result{
		Options: r.o, Violations: r.violations, Known: r.knownSeen, Notes: r.notes, Report: rep, Stats: r.stats,
		TraceHash: w.TraceHash(), Trace: w.Trace(), History: h, Coverage: r.coverage,
	}
}

// injected reports whether err comes from a fault the simulator injected.
// The log's sticky failure (logstore.ErrFailed) keeps its cause as text
// only, so the text is checked too.
func injected(err error) bool {
	return errors.Is(err, logstore.ErrInjected) || strings.Contains(err.Error(), logstore.ErrInjected.Error())
}

func sortedStrings[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TraceTail returns the last n lines of the kept trace.
func (res *Result) TraceTail(n int) []string {
	if len(res.Trace) > n {
		return res.Trace[len(res.Trace)-n:]
	}
	return res.Trace
}
