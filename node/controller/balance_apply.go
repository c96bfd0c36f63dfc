package controller

import (
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
