package node

import (
	"encoding/binary"
	"time"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/internal/plant"
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
// and check-quorum's promise: a follower that heard from its leader grants
// no vote or pre-vote in a later term, and starts no election, for
// electionTicks ticks (consensus: raft.go, inLease). Every tick on which
// less than half its lease is left, the leader sends a ReadIndex carrying
// the monotonic time it was sent; once a quorum has acknowledged it, each
// of those followers received the heartbeat after that time, and any new
// leader needs one of their votes. Ticks are discrete and never early, so a
// promise lasts at least electionTicks-1 tick intervals: no other leader
// can be elected before sent + (electionTicks-1) intervals. The leader
// holds the lease until then, less a margin for clock-rate drift between
// machines (a follower's clock may run up to 1/leaseMargin - 1 = 25% fast
// against the leader's); it measures on its own monotonic clock, so a
// paused leader that wakes up finds its lease expired.
//
// Restarts: a member that restarts has forgotten whom it heard from, so for
// electionTicks ticks after it starts it refuses every vote in a later term
// and starts no election (consensus: Config.Fresh exempts a member still at
// the bootstrap term, which has heard from no leader). It starts after any
// acknowledgement it sent before, so its promise holds across the restart.
//
// Leader transfer: the successor campaigns on MsgTimeoutNow with a vote
// request that followers grant despite their promise, and the message may
// arrive at any time in the leader's term. So a leader handing over has no
// lease, nor has one that sent MsgTimeoutNow in its current term
// (Status.TimeoutNowSent); consensus makes such a leader step down once
// the transfer has failed, and its next term starts a fresh lease. Those
// marks are Raft's current state: stepping down clears them, and the
// partition learns of the step-down only when it takes the Ready (the next
// process pass, or after a Busy replica's fsync round). So a lease also
// needs Raft to lead still, in the partition's term (leaseState).

// leaseMargin is the default fraction of the promise (electionTicks-1 tick
// intervals) a lease may use (Config.LeaseMargin), and leaseMarginMax the
// largest accepted.
const (
	leaseMargin    = 0.8
	leaseMarginMax = 0.9
)

// readLease is one group's read lease, as its leader holds it.
type readLease struct {
	until time.Duration // expiry (monotonic)
	term  uint64        // the term it was granted in

	// probing: a confirmation (ReadIndex) sent at probeSent is in flight.
	probing   bool
	probeSent time.Duration
}

// renewLeases asks every group this node leads to confirm its leadership,
// unless a confirmation is already on its way.
func (r *Reactor) renewLeases() {
	now := r.env.Clock.Monotonic()
	for _, g := range sortedKeys(r.parts) {
		p := r.parts[g]
		if !p.IsLeader() {
			continue
		}
		l := &r.group(g).lease
		if l.probing && now-l.probeSent < r.leaseDuration() {
			continue
		}
		if l.term == p.Term() && l.until-now > r.leaseDuration()/2 {
			continue // plenty left: one confirmation per half lease is enough
		}
		if r.buggify(bugLeaseRenewalSkipped) {
			continue // BUGGIFY: this confirmation is late (buggify.go)
		}
		l.probing, l.probeSent = true, now
		var ctx [9]byte
		ctx[0] = 'L'
		binary.BigEndian.PutUint64(ctx[1:], uint64(now))
		p.Replica().ReadIndex(ctx[:])
	}
}

// leaseDuration is how long a confirmation keeps a lease: a margin below
// the electionTicks-1 whole tick intervals a follower's promise lasts at
// least.
func (r *Reactor) leaseDuration() time.Duration {
	return time.Duration(float64(r.cfg.TickInterval) * float64(r.cfg.ElectionTicks-1) * r.cfg.LeaseMargin)
}

// observeReadStates extends a group's lease with the ReadIndex answers
// Raft gave back (the controller group's answers are for catch-up).
func (r *Reactor) observeReadStates(g uint64, rss []consensus.ReadState) {
	if g == controller.ControllerGroup {
		r.observeCatchUp(rss)
		r.observeBarriers(rss)
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
		l := &r.group(g).lease
		if l.term != p.Term() {
			l.until, l.term = 0, p.Term()
		}
		if until := sent + r.leaseDuration(); until > l.until {
			l.until = until
		}
		if l.probing && l.probeSent == sent {
			l.probing = false
		}
	}
}

// leaseHeld reports whether p's leader may serve reads now.
func (r *Reactor) leaseHeld(p *partition.Partition) bool {
	held, expired := r.leaseState(p)
	if held && r.buggify(bugLeaseEarlyExpiry) {
		// BUGGIFY: the leader claims its lease has run out (refusing is
		// always safe; buggify.go). Not in leaseState, which the white-box
		// view reads and which must change nothing.
		held, expired = false, true
	}
	if expired {
		r.stats.LeaseRefusals++
	}
	return held
}

// leaseState is leaseHeld without counting: whether p's leader may serve
// reads now, and whether it may not because its lease expired. It changes
// nothing, so the white-box view (Inspect) reads it too.
func (r *Reactor) leaseState(p *partition.Partition) (held, expired bool) {
	if !p.Ready() {
		return false, false
	}
	if plant.Enabled(plant.NoReadLease) {
		return true, false
	}
	rep := p.Replica()
	st := rep.BasicStatus()
	if st.RaftState != consensus.StateLeader || st.Term != p.Term() {
		// Raft has stepped down or moved to a later term, and the
		// partition has not yet taken the Ready that says so (that waits
		// for the next process pass, or a Busy replica's fsync round).
		// The marks below are this member's current state, not the
		// partition's term's: a step-down cleared TimeoutNowSent, though
		// a campaign that ignored the promises may have won already.
		return false, false
	}
	if st.LeadTransferee != 0 || st.TimeoutNowSent {
		// Handing leadership over, or did in this term: the successor's
		// campaign ignores the followers' lease promises.
		return false, false
	}
	if st.SoleVoter {
		// A single voter cannot be deposed by an election. Raft's own
		// word, not the applied membership: a leader whose log holds
		// changes beyond it decides in the newest membership there, and
		// applied [self] with [self a b] in the log is no single voter
		// (consensus/newestconf.go, "Reads and check-quorum").
		return true, false
	}
	s, ok := r.local[uint64(rep.Group)]
	if !ok || s.lease.until <= r.env.Clock.Monotonic() {
		return false, true
	}
	// A lease from an earlier term of this node's is no lease: it was
	// taken before the term changed.
	return s.lease.term == p.Term(), false
}
