package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Prefer makes Leader the preferred leader (the first replica) of a
// settled partition, keeping the other replicas in order: the balancer's
// leader move. The partition's current leader hands leadership over at its
// next preferred-leader check (node/reassign.go balanceLeaders). Like a
// balancer Reassign it is refused unless the partition is still settled at
// reassignment epoch Epoch, so it never reorders a replica set the planner
// did not see.
type Prefer struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Leader    int32  `json:"leader"`
	Epoch     int32  `json:"epoch"`
}

func (s *State) prefer(c *Prefer) Result {
	t, ok := s.Topics[c.Topic]
	if !ok || c.Partition < 0 || int(c.Partition) >= len(t.Partitions) {
		return Result{Err: kerr.UnknownTopicOrPartition}
	}
	p := &t.Partitions[c.Partition]
	if !p.Settled() || p.ReassignEpoch != c.Epoch {
		return Result{Err: kerr.ReassignmentInProgress}
	}
	if !slices.Contains(p.Replicas, c.Leader) || s.decommissioned(c.Leader) {
		return Result{Err: kerr.InvalidReplicaAssignment}
	}
	p.Replicas = PreferOrder(p.Replicas, c.Leader)
	return Result{}
}

// checkBalancerMove refuses a balancer's move planned from a state that is
// gone: the partition is no longer settled at the epoch planned from, a
// target broker was decommissioned since, or the bound on moves in flight
// is reached.
func (s *State) checkBalancerMove(p *Partition, r *Reassign) error {
	if !p.Settled() || p.ReassignEpoch != r.IfEpoch || s.reassignmentsInFlight() >= r.MovesMax {
		return kerr.ReassignmentInProgress
	}
	for _, id := range r.Target {
		if s.decommissioned(id) {
			return kerr.InvalidReplicaAssignment
		}
	}
	return nil
}

func (s *State) decommissioned(id int32) bool {
	b, ok := s.Brokers[id]
	return ok && b.Decommissioned
}

// reassignmentsInFlight counts the partitions not settled (a reassignment
// in flight or being walked back), as the planner does.
func (s *State) reassignmentsInFlight() int {
	n := 0
	for _, name := range s.TopicNames() {
		for _, p := range s.Topics[name].Partitions {
			if !p.Settled() {
				n++
			}
		}
	}
	return n
}

// BalancerMovesInFlight counts the partitions whose reassignment in flight
// the balancer proposed.
func (s *State) BalancerMovesInFlight() int {
	n := 0
	for _, name := range s.TopicNames() {
		for _, p := range s.Topics[name].Partitions {
			if p.BalancerMove && p.Target != nil {
				n++
			}
		}
	}
	return n
}

// Command returns the controller command that carries out m, planned
// with movesMax as the bound on moves in flight.
func (m Move) Command(movesMax int) *Command {
	if m.Leader() {
		return &Command{Prefer: &Prefer{Topic: m.Topic, Partition: m.Partition, Leader: m.To, Epoch: m.Epoch}}
	}
	return &Command{Reassign: &Reassign{Topic: m.Topic, Partition: m.Partition, Target: slices.Clone(m.Target), Balancer: true, IfEpoch: m.Epoch, MovesMax: movesMax}}
}

// checkDecommission refuses to decommission broker id when its replicas
// could not all move elsewhere: some partition it holds has no broker in
// service outside its replicas to take the replica, or id is the last
// broker in service of its rack and a partition it holds would end up on
// fewer racks than now. An operator adds a broker (to that rack) first, or
// reassigns the partition.
func (s *State) checkDecommission(id int32) error {
	var inService []int32
	rack := map[int32]string{}
	for _, b := range s.BrokerIDs() {
		rack[b] = s.Brokers[b].Rack
		if b != id && !s.Brokers[b].Decommissioned {
			inService = append(inService, b)
		}
	}
	for _, name := range s.TopicNames() {
		for _, p := range s.Topics[name].Partitions {
			set := p.Replicas
			if p.Target != nil {
				set = p.Target
			}
			if !slices.Contains(set, id) {
				continue
			}
			if err := decommissionFits(id, name, p.Index, set, inService, rack); err != nil {
				return err
			}
		}
	}
	return nil
}

// decommissionFits checks that partition topic/index, on replicas, can
// lose its replica on id without losing rack spread.
func decommissionFits(id int32, topic string, index int32, replicas, inService []int32, rack map[int32]string) error {
	var others []int32
	for _, r := range replicas {
		if r != id {
			others = append(others, r)
		}
	}
	usedRacks := map[string]bool{}
	for _, r := range others {
		usedRacks[rack[r]] = true
	}
	spare, newRack := false, false
	for _, b := range inService {
		if !slices.Contains(replicas, b) {
			spare = true
			newRack = newRack || !usedRacks[rack[b]]
		}
	}
	if !spare {
		return withMessage(kerr.InvalidRequest, fmt.Sprintf(
			"broker %d cannot be decommissioned: partition %s-%d has %d replicas and no other broker in service can take the one on broker %d (add a broker first)",
			id, topic, index, len(replicas), id))
	}
	now, after := RackSpread(replicas, rack), RackSpread(others, rack)
	if newRack {
		after++
	}
	if after < now {
		return withMessage(kerr.InvalidRequest, fmt.Sprintf(
			"broker %d cannot be decommissioned: it is the last broker in service in rack %q, and partition %s-%d would have its replicas on %d racks instead of %d (add a broker to rack %q first, or reassign the partition)",
			id, rack[id], topic, index, after, now, rack[id]))
	}
	return nil
}
