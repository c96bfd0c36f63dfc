package node

import (
	"fmt"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/replica"
)

// maintenanceTicks is how often (in ticks) retention and compaction run.
const maintenanceTicks = 100

// onTick does the periodic work beside Raft's own ticking.
func (r *Reactor) onTick() {
	for _, g := range r.groupIDs() {
		if rep := r.replicaOf(g); rep != nil && rep.Err() != nil {
			// A read's flush failed a write: the log lacks what Raft
			// thinks it holds. Stop and recover from the disk.
			r.fatal(fmt.Errorf("group %d: %w", g, rep.Err()))
			return
		}
	}
	r.endLastingBuggify()
	r.retryForwards()
	r.retryVoterChanges()
	r.probeMetadata()
	r.releaseListings()
	r.pumpBarriers()
	r.campaignNewGroups()
	r.renewLeases()
	r.sampleISR()
	r.ensureRegistered()
	r.noteControllerHeard()
	r.users.ensureBootstrapped(r)
	r.sendReports()
	r.ensureJoined()
	r.ctl.maybeSnapshot()
	r.syncCoordinators()
	r.txnsSync()
	r.auditTick()
	r.shareDLQTick()
	r.shareBackoffTick()
	every := uint64(maintenanceTicks)
	if r.cfg.MaintenanceTicks > 0 {
		every = uint64(r.cfg.MaintenanceTicks)
	}
	if r.ticks%every == 0 || r.buggify(bugMaintenanceEarly) {
		r.maintain()
	}
	r.repairDamaged()
	r.liftFences()
	if r.ticks%reassignTicks == 0 || r.buggify(bugReassignDriveEarly) {
		r.driveReassignments()
		r.evacuate()
	}
	r.balancerTick()
	r.sendSizeReports()
	r.throttleMoves()
	// Twice, half an election timeout apart: a leader's check-quorum
	// clears its followers' recently-active marks once per election
	// timeout, and a group whose clearing falls on the very tick of a
	// single check would never see its preferred replica as live (the
	// partitions created together share that phase, so a whole broker's
	// leaderships stayed put in TestClusterBalancerJoin).
	if phase := r.ticks % balanceTicks; phase == 0 || phase == uint64(max(1, r.cfg.ElectionTicks/2)) || r.buggify(bugBalanceLeadersEarly) {
		r.balanceLeaders()
	}
	r.expireLeaderWaits()
}

// observeRole tells the state machine of group g about leadership changes
// Raft reported in the Ready just taken.
func (r *Reactor) observeRole(g uint64, rep *replica.Replica) {
	st := rep.BasicStatus()
	isLeader := st.RaftState == consensus.StateLeader
	if g == controller.ControllerGroup {
		r.countRole(st, r.ctl.lead, r.ctl.term, r.ctl.lead == r.self)
		r.ctl.lead, r.ctl.term = st.Lead, st.Term
		return
	}
	p, ok := r.parts[g]
	if !ok {
		return
	}
	if p.Leader() == st.Lead && p.IsLeader() == isLeader && p.Term() == st.Term {
		return
	}
	r.countRole(st, p.Leader(), p.Term(), p.IsLeader())
	p.RoleChanged(st.Lead, isLeader, st.Term)
	if isLeader {
		r.reports.leaders[g] = controller.LeaderReport{Group: g, Leader: int32(r.self), Epoch: int32(st.Term)}
	}
}

// countRole counts, for the Raft metrics, what changed in a group's role
// since it was last observed (lead, term, wasLeader).
func (r *Reactor) countRole(st consensus.Status, lead, term uint64, wasLeader bool) {
	if st.RaftState == consensus.StateCandidate && st.Term != term {
		r.stats.RaftElections++
	}
	if st.Lead != 0 && st.Lead != lead {
		r.stats.RaftLeaderChanges++
	}
	if st.RaftState == consensus.StateLeader && !wasLeader {
		r.stats.RaftLeadershipsWon++
	}
}

// afterApply runs after group g applied committed entries.
func (r *Reactor) afterApply(g uint64) {
	if g == controller.ControllerGroup {
		r.reconcile()
		r.checkCaughtUp()
		r.expireLeaderWaits()
		return
	}
	r.campaignIfDue(g)
	r.wakeFetches()
	r.groupsAfterApply(g)
	r.txnsAfterApply(g)
}

// controllerReports is what this broker tells the controller about itself:
// its registration, its join request, and the partitions it now leads.
type controllerReports struct {
	leaders      map[uint64]controller.LeaderReport // leadership to report, by group
	reporting    bool                               // a ReportLeaders forward is in flight
	registering  bool                               // a RegisterBroker forward is in flight
	joinSentTick uint64                             // the tick the last join request went out (0: none yet)
	refusedTick  uint64                             // the tick the first join refusal came (0: none), dupid.go
}

// ensureRegistered asks the controller to record this broker (its
// addresses and rack) until the applied metadata shows it as configured.
func (r *Reactor) ensureRegistered() {
	if r.reports.registering || r.controllerLeader() == 0 {
		return
	}
	want := controller.Broker{
		ID: int32(r.self), KafkaHost: r.cfg.KafkaHost, KafkaPort: r.cfg.KafkaPort,
		RaftAddr: r.cfg.RaftAddr, Rack: r.cfg.Rack, Listeners: r.cfg.Listeners, DiskID: r.diskID,
		Incarnation: r.incarnation,
	}
	if b, ok := r.ctl.state.Brokers[want.ID]; ok {
		want.Decommissioned = b.Decommissioned
		want.FenceBelow = b.FenceBelow
		if b.Equal(&want) {
			return
		}
	}
	r.reports.registering = true
	r.propose(&controller.Command{RegisterBroker: &want}, func(controller.Result) { r.reports.registering = false })
}

// sendReports tells the controller which partitions this node now leads,
// so every broker's Metadata answers point clients here. A leader is
// reported once it serves reads (it has committed an entry of its term and
// holds its read lease): a client sent to it by that report, or by a
// CreateTopics answer waiting for it, is served at once.
func (r *Reactor) sendReports() {
	rs := &r.reports
	if rs.reporting || len(rs.leaders) == 0 || r.controllerLeader() == 0 {
		return
	}
	var reps []controller.LeaderReport
	for _, g := range sortedKeys(rs.leaders) {
		p, ok := r.parts[g]
		if ok && p.IsLeader() && !r.leaseHeld(p) {
			continue // not serving yet: report it on a later tick
		}
		if ok && p.IsLeader() {
			reps = append(reps, rs.leaders[g])
		}
		delete(rs.leaders, g)
	}
	if len(reps) == 0 {
		return
	}
	rs.reporting = true
	r.propose(&controller.Command{ReportLeaders: reps}, func(res controller.Result) {
		rs.reporting = false
		if res.Err != nil {
			for _, rep := range reps {
				if _, again := rs.leaders[rep.Group]; !again {
					rs.leaders[rep.Group] = rep
				}
			}
		}
	})
}

// ensureJoined: a broker that is not an initial voter asks to join until it
// hears from a controller leader.
func (r *Reactor) ensureJoined() {
	if r.controllerLeader() != 0 {
		r.reports.refusedTick = 0 // in: a refusal later starts a new wait (dupid.go)
	}
	if r.isInitialVoter() || (r.cfg.Join == "" && len(r.cfg.Peers) == 0) || r.controllerLeader() != 0 {
		return
	}
	if r.ticks-r.reports.joinSentTick < 20 && r.reports.joinSentTick != 0 {
		return
	}
	r.reports.joinSentTick = r.ticks
	if len(r.cfg.Peers) > 0 {
		// The initial voters are known by id: ask each; whoever is not the
		// leader passes the request on.
		for _, p := range r.cfg.Peers {
			r.sendJoin(netx.NodeID(p.ID), r.self, r.cfg.RaftAddr, r.incarnation)
		}
		return
	}
	r.setPeer(joinPeer, r.cfg.Join)
	r.sendJoin(joinPeer, r.self, r.cfg.RaftAddr, r.incarnation)
}
