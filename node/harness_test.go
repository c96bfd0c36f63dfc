package node

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/clock"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/sim/world"
)

// A test cluster: reactors on sim/world (one simulated clock and network,
// a crashable in-memory file system per node, incarnations whose events
// die with them), enough for scripted scenarios. package sim runs whole
// clusters with clients and a nemesis on the same world; node cannot
// import sim (sim imports node), so the reactor's Env is built here.
type cluster struct {
	t     testing.TB
	w     *world.World
	clk   *clock.Sim
	net   *netx.SimNetwork
	nodes map[int32]*tnode
	peers []Peer
	// configure, when set, changes each node's configuration at boot.
	configure func(*Config)
	// wrapFS, when set, wraps each node's file system at boot.
	wrapFS func(id int32, fs logstore.FS) logstore.FS
	// disk, when set, is each node's Disk in place of simDisk.
	disk func(s clock.Scheduler) Disk
	// startMayFail, when set, lets a node's start fail: the error is
	// kept in tnode.startErr and the incarnation exits (Env.Fatal), as
	// a broker's process would, instead of failing the test.
	startMayFail bool
}

// tnode is one broker of the cluster.
type tnode struct {
	c  *cluster
	id int32
	fs *logstore.SimFS
	r  *Reactor // the running incarnation's reactor; nil while down
	// startErr is the last start's error (cluster.startMayFail).
	startErr error
}

// reactorInstance is a reactor as a world.Instance.
type reactorInstance struct{ r *Reactor }

func (i reactorInstance) Handle(from netx.NodeID, msg []byte) { i.r.HandlePeer(from, msg) }
func (i reactorInstance) Stop()                               { i.r.Stop() }

// simDisk completes syncs after a fixed latency, running the plans then.
type simDisk struct {
	s     clock.Scheduler
	delay time.Duration
}

func (d simDisk) Sync(plans []*logstore.SyncPlan, done func(error)) {
	d.s.After(d.delay, func() {
		var first error
		for _, p := range plans {
			if err := p.Run(); err != nil && first == nil {
				first = err
			}
		}
		done(first)
	})
}

func newCluster(t testing.TB, n int, seed int64) *cluster {
	return newClusterWith(t, n, seed, nil)
}

// newClusterWith is newCluster with each node's configuration changed by
// configure.
func newClusterWith(t testing.TB, n int, seed int64, configure func(*Config)) *cluster {
	return newClusterDisk(t, n, seed, configure, nil)
}

// newClusterDisk is newClusterWith with each node's Disk made by disk (nil:
// simDisk).
func newClusterDisk(t testing.TB, n int, seed int64, configure func(*Config), disk func(clock.Scheduler) Disk) *cluster {
	c := &cluster{t: t, configure: configure, nodes: map[int32]*tnode{}, disk: disk}
	if n > 1 {
		for i := 1; i <= n; i++ {
			c.peers = append(c.peers, Peer{ID: int32(i), RaftAddr: "sim"})
		}
	}
	for i := 1; i <= n; i++ {
		c.nodes[int32(i)] = &tnode{c: c, id: int32(i)}
	}
	c.w = world.New(world.Config{Seed: seed, Nodes: n, TraceKeep: 1,
		Faults: netx.LinkFaults{DelayMin: 100 * time.Microsecond, DelayMax: 500 * time.Microsecond}}, c.boot)
	c.clk, c.net = c.w.Clock(), c.w.Net()
	for _, tn := range c.nodes {
		tn.fs = c.w.FS(netx.NodeID(tn.id))
	}
	return c
}

// boot is the world's Factory: a reactor on the node's Env. A reactor that
// does not start fails the test.
func (c *cluster) boot(env world.Env) world.Instance {
	n := c.nodes[int32(env.ID)]
	nenv := Env{
		Clock:   env.Clock,
		Sched:   env.Sched,
		FS:      env.FS,
		Net:     env.Net,
		Disk:    simDisk{s: env.Sched, delay: 300 * time.Microsecond},
		Rand:    env.Rand,
		Fatal:   env.Fatal,
		Buggify: env.Buggify,
		Logf:    func(format string, args ...any) { c.t.Logf("n%d: "+format, append([]any{n.id}, args...)...) },
	}
	if c.wrapFS != nil {
		nenv.FS = c.wrapFS(n.id, nenv.FS)
	}
	if c.disk != nil {
		nenv.Disk = c.disk(env.Sched)
	}
	cfg := Config{NodeID: n.id, Peers: c.peers, KafkaHost: "127.0.0.1", KafkaPort: 9000 + n.id, RaftAddr: "sim",
		AutoCreateTopics: true, TickInterval: 10 * time.Millisecond}
	if c.configure != nil {
		c.configure(&cfg)
	}
	n.r = New(cfg, nenv)
	n.startErr = n.r.Start()
	if n.startErr != nil && c.startMayFail {
		inst := reactorInstance{n.r}
		n.r = nil
		env.Fatal(n.startErr)
		return inst
	}
	if n.startErr != nil {
		c.t.Fatalf("node %d start: %v", n.id, n.startErr)
	}
	return reactorInstance{n.r}
}

// boot starts a new incarnation of the node on its disk (a node that is
// up is crashed first).
func (n *tnode) boot() { n.c.w.Restart(netx.NodeID(n.id)) }

// crash drops the reactor and whatever its file system had not synced.
func (n *tnode) crash() { n.crashWith(logstore.CrashRandom) }

// crashWith is crash with a chosen disk outcome (logstore.CrashMode).
func (n *tnode) crashWith(mode logstore.CrashMode) {
	n.c.w.CrashWith(netx.NodeID(n.id), mode)
	n.r = nil
}

func (c *cluster) runFor(d time.Duration) { c.clk.RunFor(d) }

// runUntil runs the clock until cond holds or max simulated time passes.
func (c *cluster) runUntil(max time.Duration, cond func() bool) bool {
	deadline := c.clk.Monotonic() + max
	for !cond() {
		if c.clk.Monotonic() >= deadline {
			return false
		}
		c.clk.RunFor(time.Millisecond)
	}
	return true
}

// runUntilStep is runUntil checking cond every step of simulated time.
func (c *cluster) runUntilStep(max, step time.Duration, cond func() bool) bool {
	deadline := c.clk.Monotonic() + max
	for !cond() {
		if c.clk.Monotonic() >= deadline {
			return false
		}
		c.clk.RunFor(step)
	}
	return true
}

// request sends req to node id and runs the clock until it is answered.
func (c *cluster) request(id int32, req kmsg.Request) kmsg.Response {
	c.t.Helper()
	return c.requestAs(id, Client{ClientID: "test"}, req)
}

// requestAs is request from a given client (its principal, address).
func (c *cluster) requestAs(id int32, client Client, req kmsg.Request) kmsg.Response {
	c.t.Helper()
	var resp kmsg.Response
	answered := false
	c.nodes[id].r.HandleRequest(client, req, func(r kmsg.Response) { resp, answered = r, true })
	if !c.runUntil(60*time.Second, func() bool { return answered }) {
		c.t.Fatalf("%s to node %d: no answer within 60s simulated", kmsg.NameForKey(req.Key()), id)
	}
	return resp
}

// waitReady runs until every node is ready (a controller leader is known
// and the node is registered).
func (c *cluster) waitReady() {
	c.t.Helper()
	ok := c.runUntil(30*time.Second, func() bool {
		for _, n := range c.nodes {
			if n.r == nil {
				continue
			}
			if ready, _ := n.r.Serving(); !ready {
				return false
			}
			if len(n.r.Metadata().Brokers) < len(c.nodes) {
				return false
			}
		}
		return true
	})
	if !ok {
		c.t.Fatalf("cluster not ready within 30s simulated")
	}
}

// addNode boots a new broker that joins the running cluster (it is not
// one of the initial controller voters); id must be the next one.
func (c *cluster) addNode(id int32) *tnode {
	tn := &tnode{c: c, id: id}
	c.nodes[id] = tn
	if got := c.w.AddNode(); got != netx.NodeID(id) {
		c.t.Fatalf("addNode(%d): the next node is %d", id, got)
	}
	tn.fs = c.w.FS(netx.NodeID(id))
	return tn
}
