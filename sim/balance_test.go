package sim

import (
	"strings"
	"testing"

	"github.com/floe-broker/floe/node/controller"
)

// balanceCheckRun is a run with only what the balancer checks use: a
// world with no nodes (its clock and trace), the invariants, and the
// balancer on (count mode, one move in flight) in a healed cluster.
func balanceCheckRun() *run {
	r := &run{w: NewWorld(Config{Seed: 1, TraceKeep: 50}, func(Env) Instance { return nil })}
	r.o.Balance = BalanceOptions{On: true, MovesMax: 1}
	r.inv = newInvariants(r)
	r.balance = balanceSeen{started: map[string]balanceMove{}, done: map[string]bool{}, last: map[string]balanceMove{}}
	r.balance.resting = true
	return r
}

// balanceState is a 5-broker metadata on the sim's three racks with the
// given partitions, by "topic/index".
func balanceState(parts map[string]controller.Partition) *controller.State {
	st := controller.NewState("test")
	for id := int32(1); id <= 5; id++ {
		st.Brokers[id] = &controller.Broker{ID: id, Rack: []string{"r1", "r2", "r3"}[(id-1)%3]}
	}
	for key, p := range parts {
		name := key[:strings.IndexByte(key, '/')]
		if st.Topics[name] == nil {
			st.Topics[name] = &controller.Topic{Name: name}
		}
		st.Topics[name].Partitions = append(st.Topics[name].Partitions, p)
	}
	return st
}

// The checker's side of --all-faults seed 1060802 on 95a9a3f, reduced: the
// balancer moves simchurn/0 from broker 1 to broker 4 ([5 1 3] to
// [5 4 3]) and completes; a nemesis reassignment then moves sim/0 from
// [1 2 3] to [4 3 5], taking a replica off broker 1 and putting one on
// broker 4, so broker 4 now holds two replicas more than broker 1 and the
// balancer rightly moves simchurn/0 back. No size changed (count mode
// reports none), and balancer-flap, comparing only the sizes, took the
// reversal for a flap. With sim/0 left where it was, the same reversal is
// a flap and must still be caught.
func TestBalancerFlapIgnoresReversalAfterOtherMoves(t *testing.T) {
	for _, nemesisMoved := range []bool{true, false} {
		r := balanceCheckRun()
		sim0 := controller.Partition{Index: 0, Replicas: []int32{1, 2, 3}}
		churn := controller.Partition{Index: 0, Replicas: []int32{5, 1, 3}, Target: []int32{5, 4, 3}, BalancerMove: true, ReassignEpoch: 4}
		look := func() {
			r.lookBalance(2, balanceState(map[string]controller.Partition{"sim/0": sim0, "simchurn/0": churn}))
		}
		look() // the balancer's move starts
		churn.Replicas, churn.Target, churn.BalancerMove, churn.ReassignEpoch = []int32{5, 4, 3}, nil, false, 5
		look() // and completes
		if r.coverage[covBalancerMove] != 1 {
			t.Fatalf("the move's completion was not counted: %v", r.coverage)
		}
		if nemesisMoved {
			sim0.Replicas, sim0.ReassignEpoch = []int32{4, 3, 5}, 2
			look()
		}
		churn.Target, churn.BalancerMove, churn.ReassignEpoch = []int32{5, 1, 3}, true, 6
		look() // the reverse starts
		flap := strings.Join(r.violations, "\n")
		switch {
		case nemesisMoved && flap != "":
			t.Errorf("a reversal after sim/0 moved was taken for a flap:\n%s", flap)
		case !nemesisMoved && !strings.Contains(flap, "balancer-flap"):
			t.Errorf("a reversal with nothing else changed was not caught (violations %q)", flap)
		}
	}
}
