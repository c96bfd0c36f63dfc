package sim

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
)

// The controller voter-change fault (issue 23; node/voters.go). In a seed
// that draws it, the nemesis now and then asks a broker, as an operator
// would, to add a controller learner as a voter (AddRaftVoter) or to
// demote a voter to a learner (RemoveRaftVoter), one request at a time:
// in a 3-node cluster the controller goes down to two voters and back, in
// a 5-node one to three. One request in three goes to the controller's
// leader just after the fault isolated it from its peers (a client that
// still reaches a deposed leader), and one in ten asks for something the
// broker must refuse (an unknown id, a voter added again, a learner
// removed). Every other fault runs meanwhile, and the usual checkers see
// the controller's metadata through every change.
//
// What is checked (invariant "controller-voters"): the fault keeps, per
// broker, what the answers say it is. An answered change is committed, so
// a broker whose last change was answered is a voter exactly when that
// change added it: a definite refusal that contradicts this (DUPLICATE_VOTER
// for a broker an answered removal made a learner, VOTER_NOT_FOUND for one
// an answered addition made a voter) fails the run, and so does the
// healed cluster's membership disagreeing with it. A change with no
// definite answer (a client timeout, or a bare REQUEST_TIMED_OUT: the
// broker gave up waiting, or its copies went to two brokers) makes its broker uncertain until a later definite
// answer; after one, the fault waits longer than a broker keeps resending the request
// (ForwardTimeout), so an old request can no longer land after a newer
// one. The planted bug voter-ack-before-commit answers a change once
// proposed: the isolated leader's answer is then a lie, its entry is lost
// when the others elect a new leader, and the check fails.

// chooseVoters draws the fault's rate from its own generator (other
// options, and the seeds that do not draw it, keep their runs): one seed
// in three, 0.5 to 1.5 changes a second.
func chooseVoters(seed int64) float64 {
	rng := rand.New(rand.NewSource(seed ^ 0x0f07e5))
	if rng.Intn(3) != 0 {
		return 0
	}
	return 0.5 + rng.Float64()
}

const (
	covVoterAdded   = "controller voter added"
	covVoterRemoved = "controller voter removed"
)

// voterTimeout is the client's wait for an answer: longer than the
// broker's own (ForwardTimeout), so the broker's answer normally comes.
const voterTimeout = 2500 * time.Millisecond

// startVoters schedules the fault on its own timer and generator, so the
// other faults of a seed that draws it come at the same times as without
// it.
func (n *nemesis) startVoters() {
	if n.o.Voters <= 0 {
		return
	}
	vw := n.voters()
	var next func()
	next = func() {
		n.w.After(time.Duration(vw.rng.ExpFloat64()/n.o.Voters*float64(time.Second)), func() {
			if !n.on {
				return
			}
			n.counts["voters"]++
			n.voterChange()
			next()
		})
	}
	next()
}

// voterWork is what the fault knows of the controller's membership.
type voterWork struct {
	rng       *rand.Rand           // the fault's own choices
	voter     map[netx.NodeID]bool // from answered changes; all voters at start
	uncertain map[netx.NodeID]bool // a change with no definite answer since
	// quiet: no request for the broker until then, after one with no
	// definite answer (its broker may still be resending it).
	quiet map[netx.NodeID]time.Duration
	busy  bool // a request in flight
	// inFlight is the broker the request in flight changes: until its
	// answer, the change may or may not have happened (seed 966225: the
	// healed cluster was checked while an add-voter was still pending).
	inFlight netx.NodeID
	counts   map[string]int
}

func (n *nemesis) voters() *voterWork {
	if n.vw == nil {
		n.vw = &voterWork{voter: map[netx.NodeID]bool{}, uncertain: map[netx.NodeID]bool{}, counts: map[string]int{},
			quiet: map[netx.NodeID]time.Duration{},
			rng:   rand.New(rand.NewSource(n.r.o.Seed ^ 0x0f07e5f))}
		for _, id := range n.w.IDs() {
			n.vw.voter[id] = true // every node is in --peers
		}
	}
	return n.vw
}

// minVoters is the fewest controller voters the fault leaves: a majority
// of the nodes. The corruption fault counts on it (groupSize).
func (n *nemesis) minVoters() int { return n.r.o.Nodes/2 + 1 }

// voterChange is the fault.
func (n *nemesis) voterChange() {
	vw := n.voters()
	if vw.busy {
		return
	}
	now := n.r.now()
	var voters, learners, unsure []netx.NodeID
	for _, id := range n.w.IDs() {
		switch {
		case now < vw.quiet[id]:
			// A request for it may still be resent: leave it alone.
		case vw.uncertain[id]:
			unsure = append(unsure, id)
		case vw.voter[id]:
			voters = append(voters, id)
		default:
			learners = append(learners, id)
		}
	}
	// A removal may take the certain voters other than the one removed
	// down to minVoters, never below.
	certain := 0
	for _, id := range n.w.IDs() {
		if vw.voter[id] && !vw.uncertain[id] {
			certain++
		}
	}
	canRemove := func(id netx.NodeID) bool {
		if vw.voter[id] && !vw.uncertain[id] {
			return certain-1 >= n.minVoters()
		}
		return certain >= n.minVoters()
	}
	var id netx.NodeID
	var add bool
	switch x := vw.rng.Intn(10); {
	case x == 0:
		// Bad input: the broker must refuse it and change nothing.
		add = vw.rng.Intn(2) == 0
		id = netx.NodeID(1 + vw.rng.Intn(len(n.w.IDs())+1)) // may be no broker at all
		if int(id) <= len(n.w.IDs()) && (vw.uncertain[id] || now < vw.quiet[id] || vw.voter[id] != add) {
			return // a sound change after all: not this fault's bad input
		}
	case x <= 2 && len(unsure) > 0:
		// Settle one whose last change had no definite answer.
		id, add = unsure[vw.rng.Intn(len(unsure))], vw.rng.Intn(2) == 0
		if !add && !canRemove(id) {
			add = true
		}
	case len(learners) > 0 && (x <= 6 || len(voters) == 0 || !canRemove(voters[0])):
		id, add = learners[vw.rng.Intn(len(learners))], true
	case len(voters) > 0 && canRemove(voters[0]):
		id = voters[vw.rng.Intn(len(voters))]
	default:
		return
	}
	var up []netx.NodeID
	for _, x := range n.w.IDs() {
		if n.w.Up(x) {
			up = append(up, x)
		}
	}
	if len(up) == 0 {
		return
	}
	via := up[vw.rng.Intn(len(up))]
	isolated := false
	if lead := n.ctlLeader(); lead != 0 && vw.rng.Intn(3) == 0 {
		via, isolated = lead, true
		n.w.Isolate(lead)
		n.w.After(n.voterHeal()+voterTimeout, n.w.Heal)
	}
	vw.busy, vw.inFlight = true, id
	n.sendVoterChange(via, add, id, isolated)
}

func (n *nemesis) sendVoterChange(via netx.NodeID, add bool, id netx.NodeID, isolated bool) {
	var req kmsg.Request
	name := "remove-voter"
	if add {
		a := kmsg.NewPtrAddRaftVoterRequest()
		a.VoterID, a.AckWhenCommitted = int32(id), true
		req, name = a, "add-voter"
	} else {
		rm := kmsg.NewPtrRemoveRaftVoterRequest()
		rm.VoterID = int32(id)
		req = rm
	}
	n.w.Tracef("fault voters: %s %d via n%d (isolated leader: %v)", name, id, via, isolated)
	n.r.kn.call(via, req, voterTimeout, func(resp kmsg.Response, err error) {
		code := int16(-1)
		msg := ""
		if err == nil {
			var m *string
			switch r := resp.(type) {
			case *kmsg.AddRaftVoterResponse:
				code, m = r.ErrorCode, r.ErrorMessage
			case *kmsg.RemoveRaftVoterResponse:
				code, m = r.ErrorCode, r.ErrorMessage
			}
			if m != nil {
				msg = *m
			}
		}
		n.w.Tracef("voters: %s %d via n%d: err=%v code=%d %s", name, id, via, err, code, msg)
		switch {
		case errors.Is(err, errConnRefused):
			code = kerr.InvalidRequest.Code // never arrived: changes nothing
		case code == kerr.RequestTimedOut.Code && msg != "":
			// The leader's refusal for now (another change in progress, a
			// learner behind, no live quorum left: voterError's message);
			// a plain REQUEST_TIMED_OUT is the broker giving up waiting.
			code = kerr.InvalidRequest.Code
		}
		n.voterAnswer(add, id, code)
	})
}

// voterAnswer records what an answer says, and checks it against what
// earlier answers said.
func (n *nemesis) voterAnswer(add bool, id netx.NodeID, code int16) {
	vw := n.voters()
	known := int(id) <= len(n.w.IDs()) && !vw.uncertain[id]
	switch code {
	case 0:
		vw.voter[id], vw.uncertain[id] = add, false
		if add {
			n.r.cover(covVoterAdded)
			if id == n.r.joined {
				n.r.cover(covJoinedVoter) // join.go
			}
		} else {
			n.r.cover(covVoterRemoved)
		}
		vw.counts["answered"]++
	case kerr.DuplicateVoter.Code:
		if known && !vw.voter[id] {
			n.r.violation("invariant", fmt.Sprintf("controller-voters: broker %d is a voter (DUPLICATE_VOTER), but the last answered change made it a learner (at %v)", id, n.r.now()))
		}
		vw.voter[id], vw.uncertain[id] = true, false
		vw.counts["refused"]++
	case kerr.VoterNotFound.Code:
		if known && vw.voter[id] {
			n.r.violation("invariant", fmt.Sprintf("controller-voters: broker %d is not a voter (VOTER_NOT_FOUND), but the last answered change made it one (at %v)", id, n.r.now()))
		}
		if int(id) <= len(n.w.IDs()) {
			vw.voter[id], vw.uncertain[id] = false, false
		}
		vw.counts["refused"]++
	case kerr.BrokerNotAvailable.Code, kerr.InvalidRequest.Code:
		vw.counts["refused"]++ // changes nothing, says nothing new
	default:
		// No answer, or REQUEST_TIMED_OUT: the change may still happen.
		// Wait until no broker can still be resending it.
		if int(id) <= len(n.w.IDs()) {
			vw.uncertain[id] = true
			vw.quiet[id] = n.r.now() + n.r.o.Broker.ForwardTimeout + time.Second
		}
		vw.counts["unknown"]++
	}
	vw.busy, vw.inFlight = false, 0
}

// voterHeal is how long the isolation of a leader lasts: up to the
// nemesis's longest fault, from the fault's own generator.
func (n *nemesis) voterHeal() time.Duration {
	lo := 20 * time.Millisecond
	if n.o.DurMax <= lo {
		return lo
	}
	return lo + time.Duration(n.vw.rng.Int63n(int64(n.o.DurMax-lo)))
}

// ctlLeader is the controller leader as the up brokers know it (the one
// that says it leads), or 0.
func (n *nemesis) ctlLeader() netx.NodeID {
	for _, id := range n.w.IDs() {
		if b, ok := n.w.Instance(id).(*Broker); ok && n.w.Up(id) && b.R != nil {
			if q := b.R.ControllerQuorum(); q.Leader == uint64(id) {
				return id
			}
		}
	}
	return 0
}

// checkVoters runs after healing: the membership the most advanced up
// broker applied must agree with every answered change.
func (r *run) checkVoters() {
	vw := r.nem.vw
	if vw == nil {
		return
	}
	// Wait for the brokers to agree, so the view checked is the cluster's.
	var voters []uint64
	agreed := r.runUntil(func() bool {
		var seen []string
		voters = nil
		for _, id := range r.w.IDs() {
			b, ok := r.w.Instance(id).(*Broker)
			if !ok || !r.w.Up(id) || b.R == nil {
				return false
			}
			q := b.R.ControllerQuorum()
			seen = append(seen, fmt.Sprint(q.Voters))
			voters = q.Voters
		}
		slices.Sort(seen)
		return len(slices.Compact(seen)) == 1
	}, 10*time.Second)
	if !agreed {
		r.violation("liveness", "controller-voters: the healed brokers did not agree on the controller's voters within 10s")
		r.traceController()
		return
	}
	for _, id := range r.w.IDs() {
		if vw.uncertain[id] || (vw.busy && vw.inFlight == id) {
			continue // no definite answer (yet): either outcome is right
		}
		if is := slices.Contains(voters, uint64(id)); is != vw.voter[id] {
			r.violation("invariant", fmt.Sprintf("controller-voters: broker %d voter=%v in the healed cluster (voters %v), but the last answered change says voter=%v",
				id, is, voters, vw.voter[id]))
		}
	}
	r.note(fmt.Sprintf("controller voter changes: %v; voters at the end %v", vw.counts, voters))
}

// traceController writes every up broker's view of the controller group to
// the trace (what a failed agreement needs first).
func (r *run) traceController() {
	for _, id := range r.w.IDs() {
		if b, ok := r.w.Instance(id).(*Broker); ok && r.w.Up(id) && b.R != nil {
			r.w.Tracef("%s", b.R.DescribeController())
		}
	}
}
