package node

import (
	"slices"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/partition"
	"github.com/floe-broker/floe/node/replica"
)

// Replica movement. The controller only records where a partition should
// live (its Target while a reassignment is in progress, else its Replicas);
// the partition's own Raft leader walks its group there, one single-server
// membership change at a time, each committed before the next:
//
//  1. add each new replica as a learner (its broker opens an empty replica
//     when it applies the metadata and is caught up by log or snapshot);
//  2. promote a learner to voter once it has everything the leader has
//     committed;
//  3. once every new replica is a voter, remove each replica that is no
//     longer wanted (never before: the group would shrink below the
//     target's size while a learner catches up) — the leader, if it is
//     one of them, first hands leadership to a wanted voter that is caught
//     up;
//  4. when the voters are exactly the target, report SetReplicas to the
//     controller, with the reassignment epoch the walk was made for (a
//     report of an older epoch is refused), which ends the reassignment;
//     brokers that lost their replica delete it when they apply that
//     (reapDoomed: only once the metadata or the replica's own log shows
//     the removal committed, and leaving a tombstone of its Raft state).
//
// A cancelled reassignment (Target cleared) walks back to Replicas the same
// way, and is reported the same way. Every step is decided from the applied membership and the leader's
// progress view, so a new leader picks up where the old one stopped.

// reassignTicks is how often (in ticks) leaders check their membership.
const reassignTicks = 5

func (r *Reactor) driveReassignments() {
	st := r.ctl.state
	for _, g := range sortedKeys(r.parts) {
		p := r.parts[g]
		if !p.Ready() {
			continue
		}
		_, cp, ok := st.PartitionByGroup(g)
		if !ok {
			continue
		}
		// A reassignment in progress asks a pipelining replica to drain
		// (replica.Quiet); otherwise a busy one is just visited later.
		if cp.Target != nil && !p.Replica().Quiet() || p.Replica().Busy() {
			continue
		}
		if !r.walkMetadataFresh(g, p.Replica()) {
			continue
		}
		r.driveOne(g, p, cp)
	}
}

// walkMetadataFresh reports whether the walk may act on the metadata
// applied here: on a leader, only once a metadata barrier (metabarrier.go)
// requested after it became leader in its current term has passed, so that
// its metadata holds every placement the controller committed before its
// term began. A broker's metadata can lag the controller's without bound
// (restarted and replaying its controller log from an older commit index,
// or cut off from the controller's leader), and a walk in the group always
// follows the metadata of whoever leads it: a leader behind the last move
// would walk the group back to the placement it still sees, while the
// brokers that applied the move's completion delete their replicas, and
// those may be voters again by then. Sim seed 2100210 (--all-faults): sim-0
// settled at [2 4 5]; n2 restarted with metadata from before that move
// (replicas [1 2 3]), won sim-0's election, added back 1 and 3 and removed
// 4, while n1 and n3, whose metadata showed the move settled without them,
// deleted their replicas: voters [1 2 3 5] with only 2 and 5 left, and the
// partition never elected a leader again. A follower walks nothing (its
// proposals fail) and is not held back.
func (r *Reactor) walkMetadataFresh(g uint64, rep *replica.Replica) bool {
	st := rep.BasicStatus()
	if st.RaftState != consensus.StateLeader {
		return true
	}
	s := r.group(g)
	if s.walkFresh == st.Term {
		return true
	}
	if s.walkAsked != st.Term {
		s.walkAsked = st.Term
		term := st.Term
		r.afterFreshMetadata(func() {
			if cur, ok := r.local[g]; ok && cur == s && s.walkAsked == term {
				s.walkFresh = term
			}
		})
	}
	return false
}

func (r *Reactor) driveOne(g uint64, p *partition.Partition, cp *controller.Partition) {
	want := cp.Replicas
	if cp.Target != nil {
		want = cp.Target
	}
	rep := p.Replica()
	conf := rep.Conf()
	status := rep.Status()
	if status.Applied < status.Commit {
		return // a committed change may not be applied yet
	}
	progress := map[uint64]consensus.PeerProgress{}
	for _, pr := range status.Progress {
		progress[pr.ID] = pr
	}
	wanted := map[uint64]bool{}
	for _, id := range want {
		wanted[uint64(id)] = true
	}
	change := func(cc consensus.ConfChange) {
		if _, _, err := rep.ProposeConfChange(cc); err == nil {
			r.queueProcess()
		}
	}
	for _, id := range want {
		if !slices.Contains(conf.Voters, uint64(id)) && !slices.Contains(conf.Learners, uint64(id)) {
			change(consensus.ConfChange{Type: consensus.ConfAddLearner, NodeID: uint64(id)})
			return
		}
	}
	for _, id := range conf.Learners {
		if wanted[id] && progress[id].Match >= status.Commit {
			change(consensus.ConfChange{Type: consensus.ConfAddVoter, NodeID: id})
			return
		}
	}
	for _, id := range conf.Learners {
		if wanted[id] {
			// Not caught up yet: removing a voter now would shrink the
			// group below its target while it waits (3 to 2 voters, where
			// one fenced or down member stops every election).
			return
		}
	}
	for _, id := range append(append([]uint64(nil), conf.Voters...), conf.Learners...) {
		if wanted[id] {
			continue
		}
		if id == r.self {
			if to := r.transferTarget(rep.Conf().Voters, wanted, progress, status.LastIndex); to != 0 {
				rep.TransferLeader(to)
				r.queueProcess()
			}
			return
		}
		change(consensus.ConfChange{Type: consensus.ConfRemove, NodeID: id})
		return
	}
	if !cp.Settled() && len(conf.Learners) == 0 && sameIDs(conf.Voters, want) && !r.group(g).settingReplicas {
		r.reportReplicas(g, want, cp.ReassignEpoch)
	}
}

// transferTarget picks a wanted voter that has the leader's whole log.
func (r *Reactor) transferTarget(voters []uint64, wanted map[uint64]bool, progress map[uint64]consensus.PeerProgress, last uint64) uint64 {
	for _, id := range voters {
		if id != r.self && wanted[id] && progress[id].Match >= last && progress[id].RecentActive {
			return id
		}
	}
	return 0
}

// reportReplicas tells the controller that group g's committed membership
// is replicas, as asked at reassignment epoch epoch: the controller refuses
// the report if the partition's membership was changed since (a new target
// or a cancellation), so a report delayed in flight never records a walk
// nobody asks for any more.
func (r *Reactor) reportReplicas(g uint64, replicas []int32, epoch int32) {
	r.group(g).settingReplicas = true
	cmd := &controller.Command{SetReplicas: &controller.SetReplicas{Group: g, Replicas: append([]int32(nil), replicas...), Epoch: epoch}}
	r.propose(cmd, func(controller.Result) {
		if s, ok := r.local[g]; ok {
			s.settingReplicas = false
		}
	})
}

func sameIDs(ids []uint64, want []int32) bool {
	if len(ids) != len(want) {
		return false
	}
	for _, id := range want {
		if !slices.Contains(ids, uint64(id)) {
			return false
		}
	}
	return true
}

// balanceTicks is how often (in ticks) leaders hand leadership back to the
// preferred replica (the first of the partition's replicas), Kafka's
// auto.leader.rebalance. A new partition's first leader is already the
// preferred replica (see campaignIfDue); balancing brings back the
// partitions whose leadership moved because of a fault.
const balanceTicks = 200

// balanceLeaders moves leadership of partitions led here to their preferred
// replica when it is a live voter with the whole log.
func (r *Reactor) balanceLeaders() {
	st := r.ctl.state
	for _, g := range sortedKeys(r.parts) {
		p := r.parts[g]
		if !p.Ready() {
			continue
		}
		_, cp, ok := st.PartitionByGroup(g)
		if !ok || cp.Target != nil || len(cp.Replicas) == 0 {
			continue
		}
		pref := uint64(cp.Replicas[0])
		if pref == r.self || r.isDecommissioned(int32(pref)) {
			continue
		}
		status := p.Replica().Status()
		for _, pr := range status.Progress {
			if pr.ID == pref && !pr.IsLearner && pr.RecentActive && pr.Match >= status.LastIndex {
				if status.LeadTransferee == 0 {
					r.stats.RaftPreferredTransfers++
				}
				p.Replica().TransferLeader(pref)
				r.queueProcess()
			}
		}
	}
}

func (r *Reactor) isDecommissioned(id int32) bool {
	b, ok := r.ctl.state.Brokers[id]
	return ok && b.Decommissioned
}

// TransferLeaderships asks every group this node leads to hand leadership
// to a caught-up voter (graceful shutdown), and returns how many groups it
// still leads.
func (r *Reactor) TransferLeaderships() int {
	led := 0
	for _, g := range r.groupIDs() {
		if rep := r.replicaOf(g); rep != nil && r.transferOne(rep) {
			led++
		}
	}
	r.queueProcess()
	return led
}

// transferOne asks a group this node leads to hand leadership to its most
// caught-up live voter; it reports whether this node leads the group.
func (r *Reactor) transferOne(rep *replica.Replica) bool {
	status := rep.Status()
	if status.RaftState != consensus.StateLeader {
		return false
	}
	var best, bestMatch uint64
	for _, pr := range status.Progress {
		if pr.ID == r.self || pr.IsLearner || !pr.RecentActive {
			continue
		}
		if best == 0 || pr.Match > bestMatch {
			best, bestMatch = pr.ID, pr.Match
		}
	}
	if best != 0 && status.LeadTransferee == 0 {
		rep.TransferLeader(best)
		r.queueProcess()
	}
	return true
}

// evacuate moves replicas off decommissioned brokers: the controller
// leader proposes a reassignment for each partition that still has one,
// replacing it with the eligible broker holding the fewest replicas.
func (r *Reactor) evacuate() {
	if r.controllerLeader() != r.self || len(r.forwards.pending) > 0 {
		return
	}
	st := r.ctl.state
	load := map[int32]int{}
	for _, name := range st.TopicNames() {
		for _, p := range st.Topics[name].Partitions {
			for _, id := range p.Replicas {
				load[id]++
			}
		}
	}
	for _, name := range st.TopicNames() {
		t := st.Topics[name]
		for i := range t.Partitions {
			p := &t.Partitions[i]
			if p.Target != nil {
				continue
			}
			var target []int32
			moved := false
			for _, id := range p.Replicas {
				if !r.isDecommissioned(id) {
					target = append(target, id)
					continue
				}
				repl := r.replacement(p.Replicas, target, load)
				if repl == 0 {
					target = append(target, id) // nowhere to go yet
					continue
				}
				target = append(target, repl)
				load[repl]++
				moved = true
			}
			if moved {
				r.propose(&controller.Command{Reassign: &controller.Reassign{Topic: t.Name, Partition: p.Index, Target: target}}, nil)
				return // one at a time; the next tick continues
			}
		}
	}
}

// replacement picks the eligible broker with the fewest replicas, among
// those on a rack the partition's kept replicas (in current or chosen and
// not decommissioned) do not use when
// there is one, so evacuation keeps the partition's rack spread as the
// balancer does (decommissioning a broker whose replicas cannot keep it is
// refused: controller.checkDecommission).
func (r *Reactor) replacement(current, chosen []int32, load map[int32]int) int32 {
	st := r.ctl.state
	used := map[string]bool{}
	for _, id := range append(slices.Clone(current), chosen...) {
		if b, ok := st.Brokers[id]; ok && !b.Decommissioned {
			used[b.Rack] = true
		}
	}
	var best int32
	bestNew := false
	for _, id := range st.BrokerIDs() {
		if r.isDecommissioned(id) || slices.Contains(current, id) || slices.Contains(chosen, id) {
			continue
		}
		isNew := !used[st.Brokers[id].Rack]
		if best == 0 || (isNew && !bestNew) || (isNew == bestNew && load[id] < load[best]) {
			best, bestNew = id, isNew
		}
	}
	return best
}
