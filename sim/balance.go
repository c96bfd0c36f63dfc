package sim

import (
	"fmt"
	"hash/fnv"
	"math/rand"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/controller"
)

// The balancer under the usual checkers (issue 23). In a seed that draws
// it, every broker runs the controller's continuous balancer
// (node/balance.go) with a small bound on moves in flight, and setup
// creates balanceTopic with every replica on brokers 1, 2 and 3, broker 1
// preferred: a 5-node cluster must move replicas onto brokers 4 and 5, a
// 3-node one must move preferred leaders off broker 1. The brokers of a
// 5-node cluster sit on three racks (r1: 1, 4; r2: 2, 5; r3: 3), so rack
// spread constrains the moves: broker 3, alone on r3, keeps a replica of
// every partition of three replicas. Nemesis reassignments and the
// decommission fault (membership.go) unbalance the cluster further, and
// the balancer's walks run under every other fault.
//
// What is checked, at every observation, in every up broker's metadata:
//
//   - balancer-bound: no more than MovesMax reassignments the balancer
//     started are in flight;
//   - balancer-rack-spread: a move the balancer started never leaves a
//     partition's replicas on fewer racks than before;
//   - balancer-flap: once the cluster has healed (every broker up, no
//     faults, writes over), the balancer never starts the exact reverse of
//     a move of the same partition it completed from the very placement
//     that move led to: every partition's replicas as the planner counts
//     them (placementPrint) and reported size what they were when the
//     move started, with the move done. With what the planner counts
//     unchanged, a reversal can only be flapping (node/controller/
//     balance.go: every move lowers a potential). Anything else that moved
//     in between (a nemesis or operator reassignment, another balancer
//     move, a decommission's evacuation, a topic deleted or re-created, a
//     size report) changes the planner's input, and a reversal after it
//     can be right: the check compares the whole placement, not only the
//     sizes (seed 1060802: a nemesis reassignment of sim/0 off brokers 1
//     and 2 made the balancer's earlier move of simchurn/0 from 1 to 4
//     worth undoing).
//
// A seed that draws the balancer draws its mode too: count, or load
// (bytes on disk, goal 3, from the sizes the partitions' leaders report).
// The load goal is what can flap: the planted bug balancer-load-flaps
// takes away its hysteresis, and balancer-flap or the liveness check below
// (the healed cluster comes to rest) must catch it.
//
// Coverage: "balancer move completed" counts the balancer's replica moves
// whose walk the controller recorded as done (the partition settled on
// the move's target).

// balanceTopic is the topic setup places off balance.
const balanceTopic = "skew"

// balancePartitions is how many partitions it has.
const balancePartitions = 3

const covBalancerMove = "balancer move completed"

// BalanceOptions turn the balancer on in a run.
type BalanceOptions struct {
	On       bool
	MovesMax int  // the brokers' bound on moves in flight
	Load     bool // --balancer load, not count
}

func (b BalanceOptions) mode() controller.BalanceMode {
	if b.Load {
		return controller.BalanceLoad
	}
	return controller.BalanceCount
}

func (b BalanceOptions) String() string {
	return fmt.Sprintf("balancer: %v, moves in flight <= %d, topic %s on brokers 1-3", b.mode(), b.MovesMax, balanceTopic)
}

// chooseBalance draws the balancer knob with its own generator, so the
// draws before it stay what each seed chose.
func chooseBalance(seed int64) BalanceOptions {
	rng := rand.New(rand.NewSource(seed ^ 0xba1a5ce))
	if rng.Intn(2) == 0 {
		return BalanceOptions{}
	}
	o := BalanceOptions{On: true, MovesMax: 1 + rng.Intn(2)}
	o.Load = rng.Intn(2) == 0
	return o
}

// WithBalancer returns o with the balancer on.
func (o Options) WithBalancer() Options {
	if !o.Balance.On {
		o.Balance = BalanceOptions{On: true, MovesMax: 1}
	}
	o.Broker.Balance = o.Balance
	return o
}

// simRack is broker id's rack in a balancing 5-node cluster ("" otherwise).
func simRack(bc BrokerConfig, id int) string {
	if !bc.Balance.On || bc.Nodes < 5 {
		return ""
	}
	return []string{"r1", "r2", "r3"}[(id-1)%3]
}

// configureBalance sets a broker's balancer from the run's knob.
func (bc BrokerConfig) configureBalance(id int, mode *controller.BalanceMode, movesMax *int, rack *string) {
	if !bc.Balance.On {
		return
	}
	*mode, *movesMax, *rack = bc.Balance.mode(), bc.Balance.MovesMax, simRack(bc, id)
}

// createSkewed creates balanceTopic with every replica on brokers 1-3.
func (r *run) createSkewed() bool {
	if !r.o.Balance.On {
		return true
	}
	created := false
	var create func()
	create = func() {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = 7, 5000
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = balanceTopic, -1, -1
		for p := int32(0); p < balancePartitions; p++ {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = p, []int32{1, 2, 3}
			t.ReplicaAssignment = append(t.ReplicaAssignment, a)
		}
		req.Topics = append(req.Topics, t)
		r.kn.call(r.meta.anyNode(), req, 6*time.Second, func(resp kmsg.Response, err error) {
			if err == nil {
				code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
				if code == 0 || code == kerr.TopicAlreadyExists.Code {
					created = true
					return
				}
				r.w.Tracef("create %s: %v", balanceTopic, kerr.ErrorForCode(code))
			}
			r.w.After(100*time.Millisecond, create)
		})
	}
	create()
	if !r.runUntil(func() bool { return created }, 30*time.Second) {
		r.violation("liveness", "a healthy cluster did not create the "+balanceTopic+" topic within 30s")
		return false
	}
	return true
}

// balanceSeen is what the balancer checks remember.
type balanceSeen struct {
	// started: per partition, the balancer's move last seen in flight,
	// by the reassignment epoch it started at.
	started map[string]balanceMove
	done    map[string]bool // moves counted as completed, by key
	// last: per partition, the balancer's move last seen completed.
	last map[string]balanceMove
	// resting: the cluster has healed (awaitBalance); balancer-flap is
	// checked from then on.
	resting bool
	// gen counts the writes to started, done, last and resting: a look's
	// inputs besides the broker's metadata.
	gen uint64
	// looked: per broker, the inputs of its last look that called no
	// fail (observeBalance skips a look whose inputs are all unchanged).
	looked map[netx.NodeID]balanceLook
	// skipped counts the looks skipped; with Options.checkBalanceSkips
	// they are looked at all the same and checked to have done nothing.
	skipped int
}

// balanceLook is what one broker's look at its metadata depended on: the
// metadata (the Reactor, its state and its count of metadata changes) and
// the balancer checks' memory (gen).
type balanceLook struct {
	rc      *node.Reactor
	st      *controller.State
	changes uint64
	gen     uint64
}

type balanceMove struct {
	epoch    int32
	target   []int32
	replicas []int32 // the replica set it moved from
	// after fingerprints the planner's input with the move done
	// (placementPrint of the metadata it was first seen in, the partition
	// on its target).
	after uint64
}

// placementPrint fingerprints what the planner (node/controller/
// balance.go) counts in st: every partition's replica set as it counts
// it (the target while a reassignment is in flight, else the replicas; in
// order, the first being the preferred leader) and its reported size,
// with the set of partition topic/index taken as set instead. It hashes
// the bytes fmt's "%s/%d=%v:%d;" would print per partition, built without
// fmt. Two metadata with the same print give the planner the same
// replica, leader and load counts per broker.
func placementPrint(st *controller.State, topic string, index int32, set []int32) uint64 {
	h := fnv.New64a()
	var buf []byte
	for _, name := range st.TopicNames() {
		for _, p := range st.Topics[name].Partitions {
			ids := p.Replicas
			if p.Target != nil {
				ids = p.Target
			}
			if name == topic && p.Index == index {
				ids = set
			}
			buf = append(buf[:0], name...)
			buf = append(buf, '/')
			buf = strconv.AppendInt(buf, int64(p.Index), 10)
			buf = append(buf, '=', '[')
			for i, id := range ids {
				if i > 0 {
					buf = append(buf, ' ')
				}
				buf = strconv.AppendInt(buf, int64(id), 10)
			}
			buf = append(buf, ']', ':')
			buf = strconv.AppendInt(buf, p.Bytes, 10)
			buf = append(buf, ';')
			h.Write(buf)
		}
	}
	return h.Sum64()
}

// observeBalance checks the balancer's moves in every up broker's
// metadata and counts the completed ones.
func (r *run) observeBalance() {
	if !r.o.Balance.On {
		return
	}
	bs := &r.balance
	if bs.started == nil {
		bs.started, bs.done, bs.last = map[string]balanceMove{}, map[string]bool{}, map[string]balanceMove{}
		bs.looked = map[netx.NodeID]balanceLook{}
	}
	for _, id := range r.w.IDs() {
		rc := r.inv.broker(id)
		if rc == nil {
			continue
		}
		st, ok := rc.MetadataIfOpen()
		if !ok {
			continue
		}
		in := balanceLook{rc: rc, st: st, changes: rc.MetadataChanges(), gen: bs.gen}
		skip := bs.looked[id] == in
		if skip {
			bs.skipped++
			if !r.o.checkBalanceSkips {
				continue
			}
		}
		failures := r.inv.failures
		r.lookBalance(id, st)
		if skip && (bs.gen != in.gen || r.inv.failures != failures) {
			r.inv.fail("balance-skip-unsafe", "n%d: a look at unchanged metadata (%d changes) and unchanged checks did something", id, in.changes)
		}
		// A look that failed is not skipped next time: it would fail
		// again, and each fail counts.
		if r.inv.failures == failures {
			in.gen = bs.gen
			bs.looked[id] = in
		} else {
			delete(bs.looked, id)
		}
	}
}

// lookBalance is observeBalance's look at broker id's metadata st. Run
// again on the same st with the same started, done, last and resting
// (balanceSeen.gen unchanged), a look that called no fail does nothing:
// each move it saw start is in started at its epoch or a later one, each
// completion it counted is in done.
func (r *run) lookBalance(id netx.NodeID, st *controller.State) {
	racks := map[int32]string{}
	for _, bid := range st.BrokerIDs() {
		racks[bid] = st.Brokers[bid].Rack
	}
	inFlight := 0
	for _, name := range st.TopicNames() {
		for _, p := range st.Topics[name].Partitions {
			r.observeBalancePartition(id, st, name, p, racks, &inFlight)
		}
	}
	if inFlight > r.o.Balance.MovesMax {
		r.inv.fail("balancer-bound", "n%d's metadata has %d balancer moves in flight, bound %d", id, inFlight, r.o.Balance.MovesMax)
	}
}

func (r *run) observeBalancePartition(id netx.NodeID, st *controller.State, topic string, p controller.Partition, racks map[int32]string, inFlight *int) {
	bs := &r.balance
	key := fmt.Sprintf("%s/%d", topic, p.Index)
	if p.BalancerMove && p.Target != nil {
		*inFlight++
		if controller.RackSpread(p.Target, racks) < controller.RackSpread(p.Replicas, racks) {
			r.inv.fail("balancer-rack-spread", "n%v: %s moves from %v to %v, fewer racks (%v)", id, key, p.Replicas, p.Target, racks)
		}
		if m, ok := bs.started[key]; !ok || p.ReassignEpoch > m.epoch {
			mv := balanceMove{epoch: p.ReassignEpoch, target: slices.Clone(p.Target), replicas: slices.Clone(p.Replicas),
				after: placementPrint(st, topic, p.Index, p.Target)}
			if last, ok := bs.last[key]; ok && bs.resting &&
				sameMembers(mv.replicas, last.target) && sameMembers(mv.target, last.replicas) &&
				placementPrint(st, topic, p.Index, p.Replicas) == last.after {
				r.inv.fail("balancer-flap", "n%v: %s moves back from %v to %v, reversing the balancer's move at epoch %d with every partition's placement and size what that move left", id, key, mv.replicas, mv.target, last.epoch)
			}
			bs.started[key] = mv
			bs.gen++
		}
		return
	}
	m, ok := bs.started[key]
	if !ok || p.ReassignEpoch != m.epoch+1 || !p.Settled() || !sameMembers(p.Replicas, m.target) {
		return
	}
	done := fmt.Sprintf("%s@%d", key, m.epoch)
	if !bs.done[done] {
		bs.done[done] = true
		bs.last[key] = m
		bs.gen++
		r.cover(covBalancerMove)
	}
}

func sameMembers(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// balanceRestMax bounds how long after the final reads the balancer has
// to bring a healed cluster to rest.
const balanceRestMax = 30 * time.Second

// awaitBalance is the balancer's liveness check: once the cluster has
// healed, within balanceRestMax every partition is settled and the planner
// finds nothing to move in the metadata of every up broker (every broker
// up: the nemesis restarted them all).
func (r *run) awaitBalance() {
	if !r.o.Balance.On {
		return
	}
	r.balance.resting = true
	r.balance.gen++
	if !r.runUntil(r.balanceAtRest, balanceRestMax) && !r.halted {
		r.violation("liveness", fmt.Sprintf("the balancer did not bring the healed cluster to rest within %v", balanceRestMax))
		return
	}
	r.w.Tracef("balancer at rest")
}

// balanceAtRest reports whether every partition is settled and the planner
// finds nothing to move in the metadata of every up broker, every
// registered broker taken as alive.
func (r *run) balanceAtRest() bool {
	for _, id := range r.w.IDs() {
		rc := r.inv.broker(id)
		if rc == nil {
			return false
		}
		st, ok := rc.MetadataIfOpen()
		if !ok {
			return false
		}
		in := st.BalanceInputMode(func(int32) bool { return true }, r.o.Balance.MovesMax, r.o.Balance.mode())
		for _, p := range in.Partitions {
			if !p.Settled {
				return false
			}
		}
		if len(controller.Plan(in)) > 0 {
			return false
		}
	}
	return true
}
