package node

import (
	"math/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/clock"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
)

// A test cluster: reactors on one simulated clock and network, each with
// its own crashable in-memory file system. It is a miniature of sim.World
// (which node must not import), enough for scripted scenarios.
type cluster struct {
	t     testing.TB
	clk   *clock.Sim
	net   *netx.SimNetwork
	rng   *rand.Rand
	nodes map[int32]*tnode
	peers []Peer
	// configure, when set, changes each node's configuration at boot.
	configure func(*Config)
}

type tnode struct {
	c     *cluster
	id    int32
	fs    *logstore.SimFS
	r     *Reactor
	inc   int // incarnation: events of a crashed reactor are dropped
	fatal error
}

// sched runs fn on the cluster clock only if the incarnation that
// scheduled it is still the running one.
type sched struct {
	n   *tnode
	inc int
}

func (s sched) After(d time.Duration, fn func()) {
	s.n.c.clk.After(d, func() {
		if s.n.inc == s.inc && s.n.r != nil {
			fn()
		}
	})
}

// simDisk completes syncs after a fixed latency, running the plans then.
type simDisk struct {
	s     sched
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
	c := &cluster{t: t, configure: configure, clk: clock.NewSim(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), rng: rand.New(rand.NewSource(seed)), nodes: map[int32]*tnode{}}
	c.net = netx.NewSimNetwork(c.clk, rand.New(rand.NewSource(seed+1)))
	c.net.SetDefaultFaults(netx.LinkFaults{DelayMin: 100 * time.Microsecond, DelayMax: 500 * time.Microsecond})
	if n > 1 {
		for i := 1; i <= n; i++ {
			c.peers = append(c.peers, Peer{ID: int32(i), RaftAddr: "sim"})
		}
	}
	for i := 1; i <= n; i++ {
		tn := &tnode{c: c, id: int32(i), fs: logstore.NewSimFS(rand.New(rand.NewSource(seed + int64(i)*7)))}
		c.nodes[int32(i)] = tn
		tn.boot()
	}
	return c
}

func (n *tnode) boot() {
	n.inc++
	s := sched{n: n, inc: n.inc}
	inc := n.inc
	env := Env{
		Clock: n.c.clk,
		Sched: s,
		FS:    n.fs,
		Net: n.c.net.Endpoint(netx.NodeID(n.id), func(from netx.NodeID, msg []byte) {
			if n.inc == inc && n.r != nil {
				n.r.HandlePeer(from, msg)
			}
		}),
		Disk:  simDisk{s: s, delay: 300 * time.Microsecond},
		Rand:  rand.New(rand.NewSource(n.c.rng.Int63())),
		Fatal: func(err error) { n.fatal = err },
		Logf:  func(format string, args ...any) { n.c.t.Logf("n%d: "+format, append([]any{n.id}, args...)...) },
	}
	cfg := Config{NodeID: n.id, Peers: n.c.peers, KafkaHost: "127.0.0.1", KafkaPort: 9000 + n.id, RaftAddr: "sim",
		AutoCreateTopics: true, TickInterval: 10 * time.Millisecond}
	if n.c.configure != nil {
		n.c.configure(&cfg)
	}
	n.r = New(cfg, env)
	if err := n.r.Start(); err != nil {
		n.c.t.Fatalf("node %d start: %v", n.id, err)
	}
}

// crash drops the reactor and whatever its file system had not synced.
func (n *tnode) crash() {
	n.inc++
	n.r = nil
	n.c.net.Detach(netx.NodeID(n.id))
	n.fs.Crash()
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
// one of the initial controller voters).
func (c *cluster) addNode(id int32) *tnode {
	tn := &tnode{c: c, id: id, fs: logstore.NewSimFS(rand.New(rand.NewSource(int64(id) * 13)))}
	c.nodes[id] = tn
	tn.boot()
	return tn
}
