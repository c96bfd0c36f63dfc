package node

import (
	"slices"

	"github.com/floe-broker/floe/internal/plant"
	"github.com/floe-broker/floe/node/controller"
)

// Continuous balancing (issue 23): the controller's leader asks the
// planner (node/controller/balance.go) for the next moves every
// balancerTicks, and proposes them as controller commands. A replica move
// is a Reassign that the partition's leader walks like any other
// (reassign.go); a leader move is a Prefer, which balanceLeaders carries
// out at its next round. Config.Balancer turns it on (cmd/floe: on by
// default; a library Config's zero value leaves it off).
//
// A broker is alive for the planner when the controller's leader heard
// from it within the last two election timeouts: every tick the leader
// notes the members whose controller-group progress is recently active
// (check-quorum clears that mark each election timeout, so the mark alone,
// read just after a clearing, would call every peer dead). A new
// controller leader waits two election timeouts before it plans, so the
// notes it reads are its own. A balancer move whose destination stops
// being alive is cancelled: the walk would wait for a learner that cannot
// catch up, holding one of the bounded move slots.

// balancerTicks is how often (in ticks) the controller leader plans.
const balancerTicks = 20

// balancerMovesMaxDefault bounds the replica moves in flight at once when
// Config.BalancerMovesMax is 0.
const balancerMovesMaxDefault = 4

// balancerState is the controller leader's balancing in progress.
type balancerState struct {
	proposing int    // balancer commands proposed and not yet applied
	term      uint64 // the controller term the leader's wait began in
	since     uint64 // the tick that term was first seen
	// heard is, per controller member, the last tick this leader saw its
	// progress recently active.
	heard map[uint64]uint64
	// Moves and LeaderMoves count the balancer's commands the controller
	// accepted, proposed by this broker (metrics).
	moves, leaderMoves uint64
	reportingSizes     bool // a ReportSizes is in flight
}

func (r *Reactor) balancerMovesMax() int {
	if r.cfg.BalancerMovesMax > 0 {
		return r.cfg.BalancerMovesMax
	}
	return balancerMovesMaxDefault
}

// balancerTick notes which brokers the controller leader hears from, and
// every balancerTicks plans and proposes the next balancing moves.
func (r *Reactor) balancerTick() {
	b := &r.bal
	if r.cfg.Balancer == controller.BalanceOff || r.controllerLeader() != r.self {
		return
	}
	if b.term != r.ctl.term || b.heard == nil {
		b.term, b.since, b.heard = r.ctl.term, r.ticks, map[uint64]uint64{}
	}
	status := r.ctl.rep.Status()
	for _, pr := range status.Progress {
		if pr.RecentActive || pr.ID == r.self {
			b.heard[pr.ID] = r.ticks
		}
	}
	if r.ticks%balancerTicks != 0 || r.ticks-b.since < uint64(2*r.cfg.ElectionTicks) || b.proposing > 0 {
		return
	}
	if status.Applied < status.Commit {
		return // plan from everything committed, a deposed leader's last proposals included
	}
	window := uint64(2 * r.cfg.ElectionTicks)
	isAlive := func(id int32) bool {
		t, ok := b.heard[uint64(id)]
		return ok && r.ticks-t <= window
	}
	r.runBalancer(isAlive)
}

// runBalancer cancels the balancer's moves stuck on a silent broker, or
// else plans and proposes the next moves.
func (r *Reactor) runBalancer(isAlive func(int32) bool) {
	b := &r.bal
	if r.cancelStuckMoves(isAlive) {
		return
	}
	movesMax := r.balancerMovesMax()
	if plant.Enabled(plant.BalancerIgnoresBound) {
		movesMax = 1 << 20 // planted bug: every move at once
	}
	in := r.ctl.state.BalanceInputMode(isAlive, movesMax, r.cfg.Balancer)
	for _, m := range controller.Plan(in) {
		leader := m.Leader()
		b.proposing++
		r.env.Logf("node %d: balancer: %s", r.self, m)
		r.propose(m.Command(movesMax), func(res controller.Result) {
			b.proposing--
			switch {
			case res.Err != nil:
			case leader:
				b.leaderMoves++
			default:
				b.moves++
			}
		})
	}
}

// cancelStuckMoves cancels the balancer's moves whose target holds a
// broker that is not alive; it reports whether it proposed any.
func (r *Reactor) cancelStuckMoves(alive func(int32) bool) bool {
	st := r.ctl.state
	cancelled := false
	for _, name := range st.TopicNames() {
		for _, p := range st.Topics[name].Partitions {
			if !p.BalancerMove || p.Target == nil || !slices.ContainsFunc(p.Target, func(id int32) bool { return !alive(id) }) {
				continue
			}
			r.bal.proposing++
			cancelled = true
			r.env.Logf("node %d: balancer: cancel %s/%d to %v (a target broker is down)", r.self, name, p.Index, p.Target)
			r.propose(&controller.Command{Reassign: &controller.Reassign{Topic: name, Partition: p.Index}}, func(controller.Result) {
				r.bal.proposing--
			})
		}
	}
	return cancelled
}

// sizeReportTicks is how often (in ticks) a broker running the load
// balancer measures the partitions it leads.
const sizeReportTicks = 40

// A size report is sent for a partition whose log size moved from the one
// in the metadata by more than 1/sizeReportFraction of it and by at least
// sizeReportMinBytes: small changes would only grow the controller's log.
const (
	sizeReportFraction = 16
	sizeReportMinBytes = 512
)

// sendSizeReports tells the controller the size of every partition this
// broker leads whose size moved past the report threshold (load balancer
// only: with --balancer count or off nothing reads the sizes). One
// ReportSizes is in flight at a time.
func (r *Reactor) sendSizeReports() {
	if r.cfg.Balancer != controller.BalanceLoad || r.bal.reportingSizes || r.ticks%sizeReportTicks != 0 || r.controllerLeader() == 0 {
		return
	}
	st := r.ctl.state
	var reps []controller.SizeReport
	for _, g := range sortedKeys(r.parts) {
		p := r.parts[g]
		if !p.IsLeader() || !r.leaseHeld(p) {
			continue
		}
		_, cp, ok := st.PartitionByGroup(g)
		if !ok {
			continue
		}
		size := p.Replica().Stats().SizeBytes
		diff := size - cp.Bytes
		if diff < 0 {
			diff = -diff
		}
		if diff >= sizeReportMinBytes && diff*sizeReportFraction > cp.Bytes {
			reps = append(reps, controller.SizeReport{Group: g, Bytes: size})
		}
	}
	if len(reps) == 0 {
		return
	}
	r.bal.reportingSizes = true
	r.propose(&controller.Command{ReportSizes: reps}, func(controller.Result) { r.bal.reportingSizes = false })
}

// BalancerStats are the balancer's figures on this broker.
type BalancerStats struct {
	// Moves and LeaderMoves count the replica and leader moves this
	// broker's balancer proposed and the controller accepted.
	Moves, LeaderMoves uint64
	// InFlight counts the balancer's replica moves in flight in the
	// metadata this broker holds (any controller leader's).
	InFlight int
}

// BalancerStats returns the balancer's figures.
func (r *Reactor) BalancerStats() BalancerStats {
	s := BalancerStats{Moves: r.bal.moves, LeaderMoves: r.bal.leaderMoves}
	if st, ok := r.MetadataIfOpen(); ok {
		s.InFlight = st.BalancerMovesInFlight()
	}
	return s
}

// MetadataIfOpen returns the applied metadata, or false while the
// controller replica is not open yet (a broker still starting).
func (r *Reactor) MetadataIfOpen() (*controller.State, bool) {
	if r.ctl == nil || r.ctl.state == nil {
		return nil, false
	}
	return r.ctl.state, true
}
