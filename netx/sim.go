package netx

import (
	"cmp"
	"math/rand"
	"slices"
	"time"

	"github.com/floe-broker/floe/clock"
)

// LinkFaults describes how one directed link (or, as the default, every link)
// misbehaves. The zero value is a perfect link: no loss, no delay.
type LinkFaults struct {
	// DropProb is the probability that a message is lost.
	DropProb float64
	// DupProb is the probability that a message is delivered twice. Each
	// copy gets its own delay, so the copies may arrive far apart.
	DupProb float64
	// ReorderProb is the probability that a message gets an extra delay,
	// drawn from (0, max(2*DelayMax, 1ms)], so that later messages overtake
	// it. Messages also reorder whenever DelayMin < DelayMax.
	ReorderProb float64
	// DelayMin and DelayMax bound the one-way latency, drawn uniformly.
	// A DelayMax below DelayMin counts as DelayMin.
	DelayMin, DelayMax time.Duration
	// Clogged holds every message that reaches the end of the link until the
	// link is unclogged, then delivers them in the order they arrived.
	// Nothing is lost to a clog; it is a long delay.
	Clogged bool
}

// SimNetStats counts what the simulated network did with messages. At every
// instant Sent + Duplicated == Delivered + Dropped + InFlight.
type SimNetStats struct {
	Sent       uint64 // Send calls, including those dropped at once
	Delivered  uint64 // Handler calls
	Dropped    uint64 // copies lost: random loss, partition, cut, down or unknown node
	Duplicated uint64 // extra copies made by DupProb
	InFlight   int    // copies scheduled or held on a clogged link, not yet resolved
	Held       int    // of InFlight, the copies waiting on a clogged link
}

// SimNetwork is a deterministic in-memory network between simulated nodes.
//
// Every message is delivered as a scheduler event at send time plus a seeded
// delay. All randomness comes from the *rand.Rand given to NewSimNetwork and is
// drawn only inside Send, in a fixed order per message (drop, duplicate, then
// delay and reorder per copy), so the same sequence of calls on the same seed
// delivers the same messages at the same instants.
//
// Where each fault is decided:
//   - loss, duplication, delay and reordering: when the message is sent;
//   - partitions, cuts, isolation, clogs and crashed destinations: when the
//     message arrives, so a message in flight when a partition starts is
//     lost, and one in flight on a link that clogs is held.
//
// SimNetwork is not safe for concurrent use and starts no goroutines: call it
// from the simulator's loop. Handlers run as scheduler events.
type SimNetwork struct {
	sched clock.Scheduler
	rng   *rand.Rand
	nodes map[NodeID]*simNode

	defaults LinkFaults
	links    map[link]LinkFaults // per-link overrides of defaults

	// groupOf maps each node named by the current Partition to its group;
	// nodes not named share one more group. nil when there is no partition.
	groupOf  map[NodeID]int
	cuts     map[link]bool
	isolated map[NodeID]bool

	// held are the copies waiting on clogged links, in arrival order.
	held  map[link][]*packet
	stats SimNetStats
}

// link is one direction between two nodes.
type link struct{ from, to NodeID }

func compareLinks(a, b link) int {
	return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to))
}

// simNode is a registered node.
type simNode struct {
	handler Handler
	// epoch changes on every Endpoint and Detach. A copy is delivered only
	// to the incarnation that was current when it was sent, so a crash
	// loses what was in flight to the node, and a handle from before a
	// restart can no longer send.
	epoch    uint64
	attached bool
}

// packet is one copy of a message in flight.
type packet struct {
	from, to NodeID
	toEpoch  uint64
	msg      []byte
}

// NewSimNetwork returns a perfect network (no faults) that schedules
// deliveries on sched and draws every random choice from rng.
func NewSimNetwork(sched clock.Scheduler, rng *rand.Rand) *SimNetwork {
	return &SimNetwork{
		sched:    sched,
		rng:      rng,
		nodes:    make(map[NodeID]*simNode),
		links:    make(map[link]LinkFaults),
		cuts:     make(map[link]bool),
		isolated: make(map[NodeID]bool),
		held:     make(map[link][]*packet),
	}
}

// Endpoint registers node id with handler h and returns its Transport. Called
// again for the same id (a restart), it starts a new incarnation: messages in
// flight to the old one are lost and the old Transport sends nothing more.
// Id zero is not a valid node: its Transport drops everything.
func (n *SimNetwork) Endpoint(id NodeID, h Handler) Transport {
	if id == 0 {
		return &simEndpoint{net: n}
	}
	node := n.nodes[id]
	if node == nil {
		node = &simNode{}
		n.nodes[id] = node
	}
	node.epoch++
	node.handler = h
	node.attached = true
	return &simEndpoint{net: n, id: id, epoch: node.epoch}
}

// Detach marks node id as crashed: messages in flight to it are lost, and so
// is everything sent to it until Endpoint registers it again. Its Transport
// stops sending.
func (n *SimNetwork) Detach(id NodeID) {
	if node := n.nodes[id]; node != nil {
		node.epoch++
		node.attached = false
	}
}

// SetDefaultFaults sets the faults of every link without its own.
func (n *SimNetwork) SetDefaultFaults(f LinkFaults) {
	n.defaults = f
	n.releaseUnclogged()
}

// SetLinkFaults sets the faults of the link from -> to, overriding defaults.
func (n *SimNetwork) SetLinkFaults(from, to NodeID, f LinkFaults) {
	n.links[link{from, to}] = f
	n.releaseUnclogged()
}

// ClearLinkFaults returns the link from -> to to the default faults.
func (n *SimNetwork) ClearLinkFaults(from, to NodeID) {
	delete(n.links, link{from, to})
	n.releaseUnclogged()
}

// Partition splits the network into groups with no traffic between them, in
// either direction. Nodes named in no group form one more group together. A
// node named in several groups belongs to the first. It replaces any earlier
// partition; cuts and isolation stay.
func (n *SimNetwork) Partition(groups ...[]NodeID) {
	n.groupOf = make(map[NodeID]int)
	for g, ids := range groups {
		for _, id := range ids {
			if _, dup := n.groupOf[id]; !dup {
				n.groupOf[id] = g
			}
		}
	}
}

// Cut stops traffic from -> to; to -> from is untouched.
func (n *SimNetwork) Cut(from, to NodeID) {
	n.cuts[link{from, to}] = true
}

// Isolate stops all traffic to and from id.
func (n *SimNetwork) Isolate(id NodeID) {
	n.isolated[id] = true
}

// Heal removes every partition, cut, isolation and clog (on the defaults and
// on every link) and delivers what the clogs held. It keeps the other faults:
// loss, duplication, delay and reordering.
func (n *SimNetwork) Heal() {
	n.groupOf = nil
	clear(n.cuts)
	clear(n.isolated)
	n.defaults.Clogged = false
	for l, f := range n.links { //floe:unordered every entry is changed alike
		f.Clogged = false
		n.links[l] = f
	}
	n.releaseUnclogged()
}

// Stats returns the network's counters.
func (n *SimNetwork) Stats() SimNetStats { return n.stats }

func (n *SimNetwork) faults(from, to NodeID) LinkFaults {
	if f, ok := n.links[link{from, to}]; ok {
		return f
	}
	return n.defaults
}

// blocked reports whether a partition, cut or isolation stops from -> to.
func (n *SimNetwork) blocked(from, to NodeID) bool {
	if n.isolated[from] || n.isolated[to] || n.cuts[link{from, to}] {
		return true
	}
	if n.groupOf == nil {
		return false
	}
	return n.group(from) != n.group(to)
}

func (n *SimNetwork) group(id NodeID) int {
	if g, ok := n.groupOf[id]; ok {
		return g
	}
	return -1
}

// send is Transport.Send for the incarnation (from, fromEpoch).
func (n *SimNetwork) send(from NodeID, fromEpoch uint64, to NodeID, msg []byte) {
	n.stats.Sent++
	src, dst := n.nodes[from], n.nodes[to]
	if from == 0 || from == to || src == nil || !src.attached || src.epoch != fromEpoch || dst == nil {
		n.stats.Dropped++
		return
	}
	f := n.faults(from, to)
	if f.DropProb > 0 && n.rng.Float64() < f.DropProb {
		n.stats.Dropped++
		return
	}
	copies := 1
	if f.DupProb > 0 && n.rng.Float64() < f.DupProb {
		copies = 2
		n.stats.Duplicated++
	}
	for i := range copies {
		body := msg
		if i > 0 {
			body = slices.Clone(msg) // each handler owns its message
		}
		p := &packet{from: from, to: to, toEpoch: dst.epoch, msg: body}
		n.stats.InFlight++
		n.sched.After(n.delay(f), func() { n.arrive(p) })
	}
}

// delay draws one copy's latency: uniform in [DelayMin, DelayMax], plus, with
// ReorderProb, an extra delay that lets later messages overtake it.
func (n *SimNetwork) delay(f LinkFaults) time.Duration {
	d := max(f.DelayMin, 0)
	if span := f.DelayMax - d; span > 0 {
		d += time.Duration(n.rng.Int63n(int64(span) + 1))
	}
	if f.ReorderProb > 0 && n.rng.Float64() < f.ReorderProb {
		extraMax := max(2*f.DelayMax, time.Millisecond)
		d += 1 + time.Duration(n.rng.Int63n(int64(extraMax)))
	}
	return d
}

// arrive is a copy reaching the end of its link: it is held if the link is
// clogged, lost if the link is blocked or the destination has crashed or
// restarted since, and otherwise handed to the destination's handler.
func (n *SimNetwork) arrive(p *packet) {
	l := link{p.from, p.to}
	if n.faults(p.from, p.to).Clogged {
		n.held[l] = append(n.held[l], p)
		n.stats.Held++
		return
	}
	n.stats.InFlight--
	dst := n.nodes[p.to]
	if n.blocked(p.from, p.to) || !dst.attached || dst.epoch != p.toEpoch || dst.handler == nil {
		n.stats.Dropped++
		return
	}
	n.stats.Delivered++
	dst.handler(p.from, p.msg)
}

// releaseUnclogged schedules, for now, every held copy whose link is no longer
// clogged, link by link in (from, to) order and in arrival order within a
// link. Each copy then arrives again and meets the faults of that moment.
func (n *SimNetwork) releaseUnclogged() {
	var open []link
	for l := range n.held { //floe:unordered sorted below
		if !n.faults(l.from, l.to).Clogged {
			open = append(open, l)
		}
	}
	slices.SortFunc(open, compareLinks)
	for _, l := range open {
		for _, p := range n.held[l] {
			n.stats.Held--
			n.sched.After(0, func() { n.arrive(p) })
		}
		delete(n.held, l)
	}
}

// simEndpoint is one incarnation of a node on a SimNetwork.
type simEndpoint struct {
	net   *SimNetwork
	id    NodeID
	epoch uint64
}

// Send implements Transport.
func (e *simEndpoint) Send(to NodeID, msg []byte) {
	e.net.send(e.id, e.epoch, to, msg)
}
