package node

import (
	"encoding/binary"
	"time"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/partition"
)

// Read leases: a partition leader serves reads (Fetch, ListOffsets, the
// group coordinator's OffsetFetch) only while it knows no other leader can
// exist.
//
// A leader that is cut off, or paused, does not learn at once that it was
// deposed; without a lease it would go on answering from its stale state
// and a consumer would see the high watermark or a committed offset go back
// (the simulator found exactly this). The lease comes from Raft's ReadIndex
// and leader stickiness: every tick on which less than half its lease is
// left, the leader sends a ReadIndex carrying
// the monotonic time it was sent; once a quorum has acknowledged it, each of
// those followers had heard from the leader at or after that time, and a
// follower ignores vote requests for an election timeout after hearing from
// its leader (consensus: check-quorum's lease). So no other leader can be
// elected before sent + electionTicks ticks. The leader holds the lease
// until then, less a margin for clock-rate drift between machines; it
// measures on its own monotonic clock, so a paused leader that wakes up
// finds its lease expired. A leader that is handing leadership over (whose
// successor campaigns with the lease forced aside) has no lease.

// leaseMargin is the fraction of the election timeout a lease may use.
const leaseMargin = 0.8

// renewLeases asks every group this node leads to confirm its leadership,
// unless a confirmation is already on its way.
func (r *Reactor) renewLeases() {
	now := r.env.Clock.Monotonic()
	for _, g := range sortedKeys(r.parts) {
		p := r.parts[g]
		if !p.IsLeader() {
			continue
		}
		if sent, pending := r.leaseProbe[g]; pending && now-sent < r.leaseDuration() {
			continue
		}
		if r.leaseTerm[g] == p.Term() && r.leases[g]-now > r.leaseDuration()/2 {
			continue // plenty left: one confirmation per half lease is enough
		}
		r.leaseProbe[g] = now
		var ctx [9]byte
		ctx[0] = 'L'
		binary.BigEndian.PutUint64(ctx[1:], uint64(now))
		p.Replica().Raft.ReadIndex(ctx[:])
	}
}

// leaseDuration is how long a confirmation keeps a lease.
func (r *Reactor) leaseDuration() time.Duration {
	return time.Duration(float64(r.cfg.TickInterval) * float64(r.cfg.ElectionTicks) * leaseMargin)
}

// observeReadStates extends a group's lease with the ReadIndex answers
// Raft gave back (the controller group's answers are for catch-up).
func (r *Reactor) observeReadStates(g uint64, rss []consensus.ReadState) {
	if g == controller.ControllerGroup {
		r.observeCatchUp(rss)
		return
	}
	for _, rs := range rss {
		if len(rs.RequestCtx) != 9 || rs.RequestCtx[0] != 'L' {
			continue
		}
		sent := time.Duration(binary.BigEndian.Uint64(rs.RequestCtx[1:]))
		p, ok := r.parts[g]
		if !ok || !p.IsLeader() {
			continue
		}
		if r.leaseTerm[g] != p.Term() {
			r.leases[g], r.leaseTerm[g] = 0, p.Term()
		}
		if until := sent + r.leaseDuration(); until > r.leases[g] {
			r.leases[g] = until
		}
		if r.leaseProbe[g] == sent {
			delete(r.leaseProbe, g)
		}
	}
}

// leaseHeld reports whether p's leader may serve reads now.
func (r *Reactor) leaseHeld(p *partition.Partition) bool {
	if !p.Ready() {
		return false
	}
	rep := p.Replica()
	st := rep.Raft.BasicStatus()
	if st.LeadTransferee != 0 {
		return false
	}
	if len(rep.Conf().Voters) == 1 && rep.Conf().Voters[0] == r.self {
		return true // a single voter cannot be deposed by an election
	}
	if r.leases[uint64(rep.Group)] <= r.env.Clock.Monotonic() {
		return false
	}
	// A lease from an earlier term of this node's is no lease: it was
	// taken before the term changed.
	return r.leaseTerm[uint64(rep.Group)] == p.Term()
}
