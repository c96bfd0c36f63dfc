package consensus_test

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/clock"
	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/sim/world"
)

// The randomized test runs whole groups on the simulator (clock.Sim,
// netx.SimNetwork, logstore.SimFS) under seeded faults: message loss,
// duplication, reordering and delay, partitions, crashes that lose
// unsynced writes, and log compaction with snapshots. After every step the
// checker (random_checker_test.go) verifies Raft's safety properties. Then
// the faults stop and the group must make progress again (liveness).
//
//	go test ./consensus -run TestRandomized                    # 300 seeds
//	FLOE_RAFT_SEEDS=5000 go test ./consensus -run TestRandomized
//	go test ./consensus -run TestRandomized -raft.seed=N -raft.trace -v   # replay one
var (
	seedsFlag = flag.Int("raft.seeds", 0, "randomized test: number of seeds (default 300; env FLOE_RAFT_SEEDS)")
	seedFlag  = flag.Int64("raft.seed", 0, "randomized test: run only this seed")
	traceFlag = flag.Bool("raft.trace", false, "randomized test: print the trace of a -raft.seed run")
)

const defaultSeeds = 300

func seedCount() int {
	if *seedsFlag > 0 {
		return *seedsFlag
	}
	if v, err := strconv.Atoi(os.Getenv("FLOE_RAFT_SEEDS")); err == nil && v > 0 {
		return v
	}
	if testing.Short() {
		return 30
	}
	return defaultSeeds
}

func TestRandomized(t *testing.T) {
	if *seedFlag != 0 {
		res := runSeed(*seedFlag)
		if *traceFlag {
			t.Log("\n" + strings.Join(res.trace, "\n"))
		}
		if res.err != nil {
			t.Fatal(res.report())
		}
		t.Logf("seed %d passed: %s; %s", res.seed, res.opts, res.summary)
		return
	}
	seeds := make([]int64, seedCount())
	for i := range seeds {
		seeds[i] = int64(i + 1)
	}
	results := runSeeds(seeds)
	var failed []string
	for _, res := range results {
		if res.err != nil {
			failed = append(failed, res.report())
		}
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d seeds failed; the first:\n%s", len(failed), len(seeds), failed[0])
	}
	t.Logf("%d seeds passed", len(seeds))
}

// runSeeds runs seeds on two workers (each run is single-threaded and
// deterministic; the workers only share the CPU).
func runSeeds(seeds []int64) []*result {
	results := make([]*result, len(seeds))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = runSeed(seeds[i])
			}
		}()
	}
	for i := range seeds {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

type result struct {
	seed    int64
	opts    options
	err     error
	trace   []string
	summary string
}

func (r *result) report() string {
	tail := r.trace
	if len(tail) > 60 {
		tail = tail[len(tail)-60:]
	}
	return fmt.Sprintf("seed %d: %v\noptions: %s\nreplay: go test ./consensus -run 'TestRandomized$' -raft.seed=%d -raft.trace -v\nlast trace lines:\n%s",
		r.seed, r.err, r.opts, r.seed, strings.Join(tail, "\n"))
}

// options are the knobs a seed draws (swarm testing: each seed its own mix
// of faults and settings).
type options struct {
	nodes               int
	faults              netx.LinkFaults
	fsyncMax            time.Duration
	crashMean, partMean time.Duration // 0: never
	leaderBias          bool          // crash and isolate leaders by preference
	// leaderKill is the chance that a new leader is crashed or cut off
	// within killDelayMax of its election: short-lived leaders leave
	// entries on a minority, the stuff of Figure 8 of the Raft paper.
	leaderKill   float64
	killDelayMax time.Duration
	// tick is the length of a Raft tick: short ticks pack many more terms
	// into the fault phase (elections take 10-20 ticks).
	tick time.Duration
	// figure8 runs the Figure 8 nemesis (figure8_test.go) instead of random
	// partitions and leader kills.
	figure8 bool
	// membership: the leader keeps removing members and adding them back
	// (as learners, promoted once caught up), including itself.
	membership bool
	// maxUncommitted caps a leader's backlog (values are ~5 bytes).
	maxUncommitted           uint64
	maxApply                 uint64 // MaxCommittedBytesPerReady
	maxSizePerMsg            uint64
	maxInflight              int
	preVote, checkQuorum     bool
	compactEvery             uint64 // 0: never compact
	proposeMean              time.Duration
	faultPhase, livePhaseMax time.Duration
}

func (o options) String() string {
	return fmt.Sprintf("nodes=%d figure8=%v membership=%v tick=%v drop=%.2f dup=%.2f reorder=%.2f delay=%v..%v fsync<=%v crash~%v partition~%v leaderBias=%v leaderKill=%.1f/%v maxMsg=%d inflight=%d maxApply=%d prevote=%v checkquorum=%v compact=%d propose~%v",
		o.nodes, o.figure8, o.membership, o.tick, o.faults.DropProb, o.faults.DupProb, o.faults.ReorderProb, o.faults.DelayMin, o.faults.DelayMax,
		o.fsyncMax, o.crashMean, o.partMean, o.leaderBias, o.leaderKill, o.killDelayMax, o.maxSizePerMsg, o.maxInflight, o.maxApply,
		o.preVote, o.checkQuorum, o.compactEvery, o.proposeMean)
}

func pick[T any](rng *rand.Rand, choices ...T) T { return choices[rng.Intn(len(choices))] }

func chooseOptions(rng *rand.Rand) options {
	o := chooseRandomOptions(rng)
	if rng.Intn(2) == 0 {
		// The nemesis owns the network and wants many short terms;
		// random crashes would only break its cycles.
		o.figure8, o.partMean, o.leaderKill, o.crashMean = true, 0, 0, 0
		o.tick = pick(rng, 2*time.Millisecond, 5*time.Millisecond)
		// Small messages and a shallow pipeline: a follower acknowledges
		// old entries before it holds the new leader's first entry.
		o.maxSizePerMsg = pick[uint64](rng, 0, 64)
		o.maxInflight = pick(rng, 1, 4)
	}
	return o
}

func chooseRandomOptions(rng *rand.Rand) options {
	return options{
		nodes: pick(rng, 3, 3, 5),
		faults: netx.LinkFaults{
			DropProb:    pick(rng, 0, 0.01, 0.05, 0.2),
			DupProb:     pick(rng, 0, 0.02, 0.1),
			ReorderProb: pick(rng, 0, 0.05, 0.3),
			DelayMin:    100 * time.Microsecond,
			DelayMax:    pick(rng, time.Millisecond, 5*time.Millisecond, 20*time.Millisecond),
		},
		fsyncMax:       pick(rng, 200*time.Microsecond, time.Millisecond, 5*time.Millisecond),
		crashMean:      pick(rng, 0, 200*time.Millisecond, 500*time.Millisecond, time.Second),
		partMean:       pick(rng, 0, 200*time.Millisecond, 500*time.Millisecond),
		leaderBias:     rng.Intn(2) == 0,
		leaderKill:     pick(rng, 0, 0.3, 0.7),
		killDelayMax:   pick(rng, 2*time.Millisecond, 10*time.Millisecond, 30*time.Millisecond),
		tick:           pick(rng, 10*time.Millisecond, 10*time.Millisecond, 3*time.Millisecond),
		maxSizePerMsg:  pick[uint64](rng, 0, 64, 1<<20),
		maxInflight:    pick(rng, 1, 4, 64),
		preVote:        rng.Intn(2) == 0,
		checkQuorum:    rng.Intn(2) == 0,
		compactEvery:   pick[uint64](rng, 0, 0, 10, 50),
		proposeMean:    pick(rng, time.Millisecond, 5*time.Millisecond, 20*time.Millisecond),
		maxUncommitted: 2000,
		maxApply:       pick[uint64](rng, 0, 0, 16),
		membership:     rng.Intn(3) == 0,
		faultPhase:     3 * time.Second,
		livePhaseMax:   30 * time.Second,
	}
}

const (
	electionTicks  = 10
	heartbeatTicks = 2
	traceLinesMax  = 400
)

// cluster is one seed's run: a group of nodes on sim/world (clock,
// network, a crashable FS per node, incarnations), the faults the seed
// chose, and the checker.
type cluster struct {
	seed     int64
	opts     options
	rng      *rand.Rand
	w        *world.World
	sim      *clock.Sim       // w.Clock()
	net      *netx.SimNetwork // w.Net()
	nodes    []*node
	chk      *checker
	conf     consensus.ConfState
	err      error
	trace    []string
	traceAll bool
	faulty   bool // fault phase: faults keep being injected
	values   int  // proposals made, for unique values
	// final proposals of the liveness phase: one per leader term, as
	// (index, term); progress is made once one of them is committed and
	// every node has applied (or snapshotted) past it.
	finals       [][2]uint64
	finalTermMax uint64
	f8           *figure8
	noCheck      bool // benchmarks: skip the per-step checks
}

// node is one member; the fields after env belong to its current
// incarnation (world.Env gives each one its own scheduler, endpoint and
// generator, and drops the events of an earlier one).
type node struct {
	c          *cluster
	id         uint64
	up         bool
	env        world.Env
	rn         *consensus.RawNode
	wal        *walFile
	dl         *durableLog
	persisting bool
	lastCommit uint64
	lastRole   consensus.StateType
	sm         stateMachine
	conf       consensus.ConfState // membership as of sm.index
	crashes    int
}

// stateMachine is the replicated state: the chained hash of every entry
// applied, so equal hashes mean equal histories.
type stateMachine struct {
	index uint64
	hash  uint64
}

func runSeed(seed int64) *result {
	c := newCluster(seed, *traceFlag && *seedFlag == seed)
	c.run()
	return &result{seed: seed, opts: c.opts, err: c.err, trace: c.trace, summary: c.summary()}
}

// newCluster chooses the seed's options; boot starts the nodes.
func newCluster(seed int64, traceAll bool) *cluster {
	rng := rand.New(rand.NewSource(seed))
	c := &cluster{seed: seed, rng: rng, opts: chooseOptions(rng), chk: newChecker(), traceAll: traceAll}
	return c
}

// boot makes the world with c.opts and starts every node on it.
func (c *cluster) boot() {
	for i := 1; i <= c.opts.nodes; i++ {
		c.conf.Voters = append(c.conf.Voters, uint64(i))
		c.nodes = append(c.nodes, &node{c: c, id: uint64(i)})
	}
	c.w = world.New(world.Config{Seed: c.rng.Int63(), Nodes: c.opts.nodes, Start: time.Unix(0, 0),
		Faults: c.opts.faults, TraceKeep: 1}, func(env world.Env) world.Instance {
		return c.nodes[env.ID-1].start(env)
	})
	c.sim, c.net = c.w.Clock(), c.w.Net()
}

func (c *cluster) tracef(format string, args ...any) {
	var now time.Duration // 0 while world.New boots the nodes
	if c.sim != nil {
		now = c.sim.Monotonic()
	}
	line := fmt.Sprintf("%9.3fms ", float64(now)/float64(time.Millisecond)) + fmt.Sprintf(format, args...)
	c.trace = append(c.trace, line)
	if !c.traceAll && len(c.trace) > 2*traceLinesMax {
		c.trace = append([]string(nil), c.trace[len(c.trace)-traceLinesMax:]...)
	}
}

func (c *cluster) fail(err error) {
	if c.err == nil {
		c.err = err
		c.tracef("FAILED: %v", err)
	}
}

func (c *cluster) run() {
	c.boot()
	c.faulty = true
	c.scheduleProposal()
	if c.opts.crashMean > 0 {
		c.scheduleCrash()
	}
	if c.opts.partMean > 0 {
		c.schedulePartition()
	}
	if c.opts.figure8 {
		c.startFigure8()
	}
	if c.opts.membership {
		c.scheduleMembership()
	}
	c.runUntil(c.opts.faultPhase, nil)
	if c.err != nil {
		return
	}
	c.heal()
	done := func() bool {
		for _, f := range c.finals {
			if info, ok := c.chk.committed[f[0]]; !ok || info.term != f[1] {
				continue
			}
			for _, n := range c.nodes {
				if !n.up || n.sm.index < f[0] || len(n.conf.Voters) != len(c.nodes) {
					return false
				}
			}
			return true
		}
		return false
	}
	c.sim.After(0, c.proposeFinal)
	if !c.runUntil(c.opts.faultPhase+c.opts.livePhaseMax, done) && c.err == nil {
		c.fail(fmt.Errorf("liveness: no progress within %v of healing every fault (%s)", c.opts.livePhaseMax, c.describeNodes()))
	}
}

// runUntil steps the simulation until time end, a failure, or done().
func (c *cluster) runUntil(end time.Duration, done func() bool) bool {
	for c.err == nil && c.sim.Monotonic() < end {
		if done != nil && done() {
			return true
		}
		if !c.sim.Step() {
			break
		}
	}
	return done != nil && done()
}

// heal ends the fault phase: the network becomes reliable (still with
// delays and reordering) and every node comes back.
func (c *cluster) heal() {
	c.faulty = false
	c.net.Heal()
	// A healed network behaves like TCP on a LAN: no loss, and in order
	// (one fixed delay, so later messages never overtake earlier ones),
	// with round trips well inside an election timeout.
	delay := min(c.opts.faults.DelayMax, c.opts.tick/4)
	c.net.SetDefaultFaults(netx.LinkFaults{DelayMin: delay, DelayMax: delay})
	for _, n := range c.nodes {
		if !n.up {
			n.restart()
		}
	}
	c.tracef("faults healed")
}

func (c *cluster) randDuration(mean time.Duration) time.Duration {
	return time.Duration(c.rng.Int63n(int64(2*mean) + 1))
}

func (c *cluster) upNodes() []*node {
	var up []*node
	for _, n := range c.nodes {
		if n.up {
			up = append(up, n)
		}
	}
	return up
}

// leader is the node that leads the latest term. A node that was removed
// while cut off may believe it still leads an older term: nobody tells a
// non-member about newer terms (harmless, it cannot commit anything).
func (c *cluster) leader() *node {
	var best *node
	var bestTerm uint64
	for _, n := range c.nodes {
		if !n.up {
			continue
		}
		if st := n.rn.Status(); st.RaftState == consensus.StateLeader && st.Term > bestTerm {
			best, bestTerm = n, st.Term
		}
	}
	return best
}

// target picks a node for a fault: a leader by preference when leaderBias.
func (c *cluster) target() *node {
	if l := c.leader(); l != nil && c.opts.leaderBias && c.rng.Intn(3) > 0 {
		return l
	}
	up := c.upNodes()
	if len(up) == 0 {
		return nil
	}
	return up[c.rng.Intn(len(up))]
}

func (c *cluster) scheduleProposal() {
	c.sim.After(c.randDuration(c.opts.proposeMean), func() {
		if !c.faulty || c.err != nil {
			return
		}
		c.scheduleProposal()
		up := c.upNodes()
		if len(up) == 0 {
			return
		}
		// Mostly at the leader, sometimes anywhere (and refused there).
		n := up[c.rng.Intn(len(up))]
		if l := c.leader(); l != nil && c.rng.Intn(4) > 0 {
			n = l
		}
		c.values++
		if _, _, err := n.rn.Propose(consensus.EntryNormal, []byte("v"+strconv.Itoa(c.values))); err == nil {
			n.stepDone()
		}
	})
}

func (c *cluster) proposeFinal() {
	if c.err != nil {
		return
	}
	c.sim.After(50*time.Millisecond, c.proposeFinal)
	l := c.leader()
	if l == nil {
		return
	}
	st := l.rn.Status()
	if st.Term <= c.finalTermMax {
		return // once per term: only a new leader may have lost it
	}
	if index, term, err := l.rn.Propose(consensus.EntryNormal, []byte("final")); err == nil {
		c.finals = append(c.finals, [2]uint64{index, term})
		c.finalTermMax = term
		c.tracef("n%d proposes the final value at %d/%d", l.id, term, index)
		l.stepDone()
	}
}

func (c *cluster) scheduleCrash() {
	c.sim.After(c.randDuration(c.opts.crashMean), func() {
		if !c.faulty || c.err != nil {
			return
		}
		c.scheduleCrash()
		n := c.target()
		if n == nil {
			return
		}
		n.crash()
		down := time.Duration(c.rng.Int63n(int64(300*time.Millisecond))) + 5*time.Millisecond
		c.sim.After(down, func() {
			if c.faulty && !n.up && c.err == nil {
				n.restart()
			}
		})
	})
}

// maybeKillLeader cuts a new leader short: soon after its election it
// crashes or is isolated (if it still leads that term), and comes back
// a little later.
func (c *cluster) maybeKillLeader(n *node, term uint64) {
	if !c.faulty || c.rng.Float64() >= c.opts.leaderKill {
		return
	}
	crash := c.rng.Intn(2) == 0
	c.sim.After(time.Duration(c.rng.Int63n(int64(c.opts.killDelayMax))), func() {
		if !c.faulty || c.err != nil || !n.up {
			return
		}
		if st := n.rn.Status(); st.RaftState != consensus.StateLeader || st.Term != term {
			return
		}
		back := time.Duration(c.rng.Int63n(int64(200*time.Millisecond))) + 20*time.Millisecond
		if crash {
			n.crash()
			c.sim.After(back, func() {
				if c.faulty && !n.up && c.err == nil {
					n.restart()
				}
			})
			return
		}
		c.net.Isolate(netx.NodeID(n.id))
		c.tracef("n%d (leader of term %d) isolated", n.id, term)
		c.sim.After(back, func() {
			if c.faulty && c.err == nil {
				c.net.Heal()
				c.tracef("network healed")
			}
		})
	})
}

func (c *cluster) schedulePartition() {
	c.sim.After(c.randDuration(c.opts.partMean), func() {
		if !c.faulty || c.err != nil {
			return
		}
		c.schedulePartition()
		switch c.rng.Intn(3) {
		case 0:
			c.net.Heal()
			c.tracef("network healed")
		case 1:
			if n := c.target(); n != nil {
				c.net.Heal()
				c.net.Isolate(netx.NodeID(n.id))
				c.tracef("n%d isolated", n.id)
			}
		default:
			var a, b []netx.NodeID
			for _, n := range c.nodes {
				if c.rng.Intn(2) == 0 {
					a = append(a, netx.NodeID(n.id))
				} else {
					b = append(b, netx.NodeID(n.id))
				}
			}
			c.net.Heal()
			c.net.Partition(a, b)
			c.tracef("partition %v | %v", a, b)
		}
	})
}

func (c *cluster) summary() string {
	var terms, crashes int
	for range c.chk.leaders {
		terms++
	}
	for _, n := range c.nodes {
		crashes += n.crashes
	}
	return fmt.Sprintf("%d leaders elected, %d entries committed, %d crashes, %d proposals, %d events, net %+v",
		terms, c.chk.maxCommit, crashes, c.values, c.sim.Executed(), c.net.Stats())
}

func (c *cluster) describeNodes() string {
	var parts []string
	for _, n := range c.nodes {
		if !n.up {
			parts = append(parts, fmt.Sprintf("n%d down", n.id))
			continue
		}
		st := n.rn.Status()
		parts = append(parts, fmt.Sprintf("n%d %s term %d lead %d commit %d applied %d last %d persisting %v ready %v",
			n.id, st.RaftState, st.Term, st.Lead, st.Commit, n.sm.index, st.LastIndex, n.persisting, n.rn.HasReady()))
		for _, p := range st.Progress {
			parts = append(parts, fmt.Sprintf("  n%d->n%d %+v", n.id, p.ID, p))
		}
	}
	return strings.Join(parts, "; ")
}

// start is the world's Factory for this node: it boots (or reboots) the
// node from what its FS holds, or fails the run and returns nil.
func (n *node) start(env world.Env) world.Instance {
	c := n.c
	n.env = env
	wal, dl, err := openWAL(env.FS, c.conf)
	if err != nil {
		c.fail(fmt.Errorf("n%d: recovering its log: %w", n.id, err))
		return nil
	}
	n.wal, n.dl = wal, dl
	snapIndex, snapHash := dl.snapshotPoint()
	n.sm = stateMachine{index: snapIndex, hash: snapHash}
	// The state machine, membership included, restarts from the snapshot;
	// the entries after it are applied again.
	n.conf = c.conf
	if snap, _ := dl.ms.Snapshot(); !snap.IsEmpty() {
		n.conf = snap.Meta.ConfState
	}
	dl.ms.SetConfState(n.conf)
	rn, err := consensus.NewRawNode(consensus.Config{
		ID: n.id, ElectionTicks: electionTicks, HeartbeatTicks: heartbeatTicks,
		Storage: dl.ms, Applied: snapIndex,
		MaxSizePerMsg: c.opts.maxSizePerMsg, MaxInflightMsgs: c.opts.maxInflight, MaxInflightBytes: 1 << 20,
		MaxUncommittedEntriesBytes: c.opts.maxUncommitted,
		MaxCommittedBytesPerReady:  c.opts.maxApply,
		CheckQuorum:                c.opts.checkQuorum, PreVote: c.opts.preVote, Rand: env.Rand,
	})
	if err != nil {
		c.fail(fmt.Errorf("n%d: restart: %w", n.id, err))
		return nil
	}
	n.rn = rn
	n.up = true
	n.persisting = false
	st := rn.Status()
	n.lastCommit, n.lastRole = st.Commit, st.RaftState
	c.tracef("n%d starts: term %d commit %d last %d snapshot %d", n.id, st.Term, st.Commit, st.LastIndex, snapIndex)
	n.after(time.Duration(env.Rand.Int63n(int64(c.opts.tick))), n.tick)
	return n
}

// Handle takes a message from a peer (world.Instance).
func (n *node) Handle(from netx.NodeID, msg []byte) {
	c := n.c
	if !n.up || c.err != nil {
		return
	}
	m, err := consensus.UnmarshalMessage(msg)
	if err != nil {
		c.fail(fmt.Errorf("n%d: undecodable message from n%d: %w", n.id, from, err))
		return
	}
	if c.traceAll {
		c.tracef("n%d <- %s", n.id, consensus.DescribeMessage(m))
	}
	_ = n.rn.Step(m) // a message from a removed or unknown peer is refused; fine
	n.stepDone()
}

// Stop is world.Instance's clean shutdown; the test only crashes nodes.
func (n *node) Stop() {}

// restart boots a new incarnation on the node's FS.
func (n *node) restart() { n.c.w.Restart(netx.NodeID(n.id)) }

// crash kills the node: it loses whatever its FS had not synced, and the
// events of this incarnation never run.
func (n *node) crash() {
	n.up = false
	n.crashes++
	n.c.w.Crash(netx.NodeID(n.id))
	n.rn, n.wal, n.dl = nil, nil, nil
	n.c.tracef("n%d crashes", n.id)
}

// after runs fn later, unless the node crashed meanwhile (the world drops
// the events of an earlier incarnation) or the run failed.
func (n *node) after(d time.Duration, fn func()) {
	n.env.Sched.After(d, func() {
		if n.up && n.c.err == nil {
			fn()
		}
	})
}

func (n *node) tick() {
	n.rn.Tick()
	n.stepDone()
	n.after(n.c.opts.tick, n.tick)
}

// stepDone runs after every step of the node: check, then handle Readies.
func (n *node) stepDone() {
	for n.c.err == nil && n.up {
		n.check()
		if !n.handleReady() {
			return
		}
	}
}

func (n *node) check() {
	if n.c.noCheck {
		return
	}
	st := n.rn.Status()
	if st.RaftState != n.lastRole {
		n.c.tracef("n%d becomes %s in term %d (commit %d, last %d)", n.id, st.RaftState, st.Term, st.Commit, st.LastIndex)
		n.lastRole = st.RaftState
		if st.RaftState == consensus.StateLeader {
			n.c.maybeKillLeader(n, st.Term)
			n.c.figure8OnLeader(n, st.Term)
		}
	}
	if err := n.c.chk.observe(n.id, st, n.lastCommit, n.rn.TermAt); err != nil {
		n.c.fail(err)
	}
	n.lastCommit = max(n.lastCommit, st.Commit)
}

// handleReady takes the next Ready. It sends what may go at once and
// writes what must be persisted; the rest waits for the fsync. It reports
// whether the Ready was finished at once (nothing to persist).
func (n *node) handleReady() bool {
	if n.persisting || !n.rn.HasReady() {
		return false
	}
	rd := n.rn.Ready()
	n.send(rd.Messages)
	if rd.HardState == (consensus.HardState{}) && len(rd.Entries) == 0 && rd.Snapshot.IsEmpty() {
		n.finishReady(rd, false)
		return true
	}
	if err := n.wal.writeReady(rd); err != nil {
		n.c.fail(fmt.Errorf("n%d: write: %w", n.id, err))
		return false
	}
	n.persisting = true
	delay := time.Duration(n.c.rng.Int63n(int64(n.c.opts.fsyncMax))) + 50*time.Microsecond
	n.after(delay, func() {
		n.finishReady(rd, true)
		n.stepDone()
	})
	return false
}

// finishReady completes a Ready once its writes are durable.
func (n *node) finishReady(rd consensus.Ready, wrote bool) {
	c := n.c
	if wrote {
		if err := n.wal.sync(); err != nil {
			c.fail(fmt.Errorf("n%d: sync: %w", n.id, err))
			return
		}
	}
	if err := n.persist(rd); err != nil {
		c.fail(err)
		return
	}
	n.send(rd.MessagesAfterPersist)
	for _, e := range rd.CommittedEntries {
		if err := n.apply(e); err != nil {
			c.fail(err)
			return
		}
	}
	n.rn.Advance(rd)
	n.persisting = false
	n.maybeCompact()
}

// persist mirrors the durable writes into the storage RawNode reads, and
// checks each new entry against every log seen.
func (n *node) persist(rd consensus.Ready) error {
	if s := rd.Snapshot; !s.IsEmpty() {
		if err := n.dl.installSnapshot(s); err != nil {
			return fmt.Errorf("n%d: install snapshot: %w", n.id, err)
		}
		if err := n.c.chk.persisted(n.id, s.Meta.Index, s.Meta.Term, snapshotHash(s)); err != nil {
			return err
		}
		if err := n.c.chk.appliedEntry(n.id, s.Meta.Index, snapshotHash(s)); err != nil {
			return err
		}
		n.sm.index, n.sm.hash = s.Meta.Index, snapshotHash(s)
		n.conf = s.Meta.ConfState
		n.c.tracef("n%d installs snapshot %d/%d", n.id, s.Meta.Term, s.Meta.Index)
	}
	if err := n.dl.appendEntries(rd.Entries); err != nil {
		return fmt.Errorf("n%d: append: %w", n.id, err)
	}
	for _, e := range rd.Entries {
		if n.c.noCheck {
			break
		}
		h, _ := n.dl.hashAt(e.Index)
		if err := n.c.chk.persisted(n.id, e.Index, e.Term, h); err != nil {
			return err
		}
	}
	if rd.HardState != (consensus.HardState{}) {
		n.dl.ms.SetHardState(rd.HardState)
	}
	return nil
}

func (n *node) apply(e consensus.Entry) error {
	if e.Index != n.sm.index+1 {
		return violationf("n%d applies entry %d after %d", n.id, e.Index, n.sm.index)
	}
	n.sm.hash = prefixHash(n.sm.hash, e)
	n.sm.index = e.Index
	if e.Type == consensus.EntryConfChange {
		cc, err := consensus.UnmarshalConfChange(e.Data)
		if err != nil {
			return fmt.Errorf("n%d: committed conf change %d does not decode: %w", n.id, e.Index, err)
		}
		n.conf = n.rn.ApplyConfChange(cc)
		n.c.tracef("n%d applies %d/%d %v %d: voters %v learners %v", n.id, e.Term, e.Index, cc.Type, cc.NodeID, n.conf.Voters, n.conf.Learners)
	}
	if n.c.noCheck {
		return nil
	}
	return n.c.chk.appliedEntry(n.id, e.Index, n.sm.hash)
}

// maybeCompact snapshots the applied state every compactEvery entries and
// drops the log before the previous snapshot point, keeping a tail so that
// followers a little behind catch up by appends, not snapshots.
func (n *node) maybeCompact() {
	every := n.c.opts.compactEvery
	snapIndex, _ := n.dl.snapshotPoint()
	if every == 0 || n.sm.index < snapIndex+every {
		return
	}
	term, err := n.dl.ms.Term(n.sm.index)
	if err != nil {
		return // applied entries not all persisted yet
	}
	snap := consensus.Snapshot{
		Meta: consensus.SnapshotMeta{Index: n.sm.index, Term: term, ConfState: n.conf},
		Data: binary.BigEndian.AppendUint64(nil, n.sm.hash),
	}
	compactTo := max(snapIndex, n.dl.base)
	if err := n.wal.writeCompaction(snap, compactTo); err != nil {
		n.c.fail(fmt.Errorf("n%d: compaction: %w", n.id, err))
		return
	}
	if err := n.dl.compact(snap, compactTo); err != nil {
		n.c.fail(fmt.Errorf("n%d: compaction: %w", n.id, err))
	}
}

func (n *node) send(msgs []consensus.Message) {
	for i := range msgs {
		n.env.Net.Send(netx.NodeID(msgs[i].To), msgs[i].Marshal())
	}
}

// TestRandomizedDeterministic: the same seed gives the same run.
func TestRandomizedDeterministic(t *testing.T) {
	for _, seed := range []int64{3, 7} {
		a, b := runSeed(seed), runSeed(seed)
		if a.summary != b.summary || !slices.Equal(a.trace, b.trace) {
			t.Fatalf("seed %d differs between runs:\n%s\n%s", seed, a.summary, b.summary)
		}
		if a.err != nil {
			t.Fatal(a.report())
		}
		if c, d := runSeed(seed+1000), a; c.summary == d.summary {
			t.Fatalf("seeds %d and %d ran identically", seed, seed+1000)
		}
	}
}
