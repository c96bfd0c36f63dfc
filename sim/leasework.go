package sim

import (
	"math/rand"
	"time"

	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node"
)

// Bounced leader transfers (issue 15): a partition leader hands its
// leadership off and the new leader hands it straight back, within a few
// milliseconds, so the first leader leads again in a later term while the
// read lease it held in its earlier term has not run out. A lease is
// honoured only in the term a quorum confirmed it in (node/lease.go): the
// old one must not count, the new term needs its own confirmation.
//
// Honouring the old lease would not show in the history today: the
// leader is current again (it committed an entry of its new term before it
// serves), and no other leader can be elected while the followers' promise
// from that term holds, since only the leader's own transfer overrides it.
// So the rule is checked white-box, on every observation (leaseInvariant).
// It is the line between a lease and a stale read the day any of those
// other guarantees moves (a transfer initiated elsewhere, a clock drifting
// past the margin).
//
// On in about half the seeds, at a rate drawn at the end of ChooseOptions.

// startBounce starts the bounced transfers if the seed has them.
func (r *run) startBounce() {
	if r.o.Bounce <= 0 {
		return
	}
	rng := rand.New(rand.NewSource(r.o.Seed ^ 0xb0c3))
	var loop func()
	loop = func() {
		wait := time.Duration(rng.ExpFloat64() / r.o.Bounce * float64(time.Second))
		r.w.After(wait, func() {
			if r.stopping {
				return
			}
			r.bounce(int32(rng.Intn(int(r.o.Partitions))))
			loop()
		})
	}
	loop()
}

// bounce makes the leader of part hand off every leadership it holds, and
// the first other broker seen leading part in a later epoch (within 200 ms)
// hand its leaderships off in turn.
func (r *run) bounce(part int32) {
	from, epoch := r.currentLeader(part)
	if from == 0 {
		return
	}
	r.adminTransfer(from)
	deadline := r.now() + 200*time.Millisecond
	var watch func()
	watch = func() {
		if r.stopping || r.now() > deadline {
			return
		}
		if to, e := r.currentLeader(part); to != 0 && to != from && e > epoch {
			r.adminTransfer(to)
			r.cover("leader transfer bounced back")
			return
		}
		r.w.After(time.Millisecond, watch)
	}
	r.w.After(time.Millisecond, watch)
}

// currentLeader is the up broker leading part in the highest epoch.
func (r *run) currentLeader(part int32) (netx.NodeID, int32) {
	var best netx.NodeID
	var bestEpoch int32
	for _, id := range r.w.IDs() {
		if e, ok := r.leaderEpoch(id, r.topic, part); ok && (best == 0 || e > bestEpoch) {
			best, bestEpoch = id, e
		}
	}
	return best, bestEpoch
}

func (r *run) adminTransfer(id netx.NodeID) {
	r.w.Call(id, 0, "admin transfer-leaderships (bounce)", func(inst Instance) {
		if b, ok := inst.(*Broker); ok {
			b.R.TransferLeaderships()
		}
	}, nil)
}

// leaseInvariant: a leader serves reads under a lease only if a quorum
// confirmed it in the leader's current term.
func (r *run) leaseInvariant(id netx.NodeID, inc uint64, v node.ReplicaView) {
	if !v.LeaseHeld {
		return
	}
	if v.LeaseTerm != v.Epoch {
		r.inv.fail("lease-from-earlier-term", "n%d.%d group %d: serving reads in term %d under a lease confirmed in term %d",
			id, inc, v.Group, v.Epoch, v.LeaseTerm)
	}
}
