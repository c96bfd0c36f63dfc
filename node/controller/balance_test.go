package controller

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"pgregory.net/rapid"
)

// The balancer against a naive model of the cluster: brokers and partitions
// drawn at random, Plan's moves applied as if every walk completed, again
// and again. Each round's moves are checked one by one (bound, rack
// spread, eligible destination, one move per partition), and the rest
// state is checked by brute force (no pair of brokers two apart with a
// move left that keeps rack spread), plus the even spread the issue asks
// for where racks cannot stand in the way.

type balModel struct {
	in BalanceInput
}

func genBalance(t *rapid.T, allEligible bool, racks []string) *balModel {
	return genBalanceRF(t, allEligible, racks, 0)
}

// genBalanceRF draws a cluster whose partitions all have rf replicas (0:
// any number from 1 to 3).
func genBalanceRF(t *rapid.T, allEligible bool, racks []string, rf int) *balModel {
	n := rapid.IntRange(max(1, rf), 9).Draw(t, "brokers")
	m := &balModel{in: BalanceInput{MovesMax: rapid.IntRange(1, 5).Draw(t, "movesMax")}}
	for id := int32(1); id <= int32(n); id++ {
		b := BalanceBroker{ID: id, Rack: rapid.SampledFrom(racks).Draw(t, "rack"), Alive: true}
		if !allEligible {
			b.Alive = rapid.IntRange(0, 6).Draw(t, "dead") != 0
			b.Decommissioned = rapid.IntRange(0, 6).Draw(t, "decom") == 0
		}
		m.in.Brokers = append(m.in.Brokers, b)
	}
	// Brokers the first partitions favour, so the start is uneven (a
	// joined broker holds nothing).
	few := rapid.IntRange(1, n).Draw(t, "crowded")
	parts := rapid.IntRange(0, 40).Draw(t, "partitions")
	for i := 0; i < parts; i++ {
		pool := n
		if rapid.Bool().Draw(t, "crowd") {
			pool = max(few, rf)
		}
		r := rf
		if r == 0 {
			r = rapid.IntRange(1, min(3, pool)).Draw(t, "rf")
		}
		perm := rapid.Permutation(seq(pool)).Draw(t, "replicas")[:r]
		p := BalancePartition{Topic: "t", Index: int32(i), Epoch: rapid.Int32Range(0, 3).Draw(t, "epoch"), Replicas: perm, Settled: true}
		if !allEligible && rapid.IntRange(0, 8).Draw(t, "inFlight") == 0 {
			p.Target = slices.Clone(perm)
			p.Settled = false
		}
		m.in.Partitions = append(m.in.Partitions, p)
	}
	return m
}

func seq(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i + 1)
	}
	return out
}

func (m *balModel) broker(id int32) BalanceBroker {
	for _, b := range m.in.Brokers {
		if b.ID == id {
			return b
		}
	}
	return BalanceBroker{}
}

func (m *balModel) racks() map[int32]string {
	r := map[int32]string{}
	for _, b := range m.in.Brokers {
		r[b.ID] = b.Rack
	}
	return r
}

// counts returns replicas and preferred leaderships per eligible broker.
func (m *balModel) counts() (replicas, leaders map[int32]int) {
	replicas, leaders = map[int32]int{}, map[int32]int{}
	for _, b := range m.in.Brokers {
		if b.eligible() {
			replicas[b.ID], leaders[b.ID] = 0, 0
		}
	}
	for _, p := range m.in.Partitions {
		set := p.Replicas
		if p.Target != nil {
			set = p.Target
		}
		for _, id := range set {
			if _, ok := replicas[id]; ok {
				replicas[id]++
			}
		}
		if _, ok := leaders[set[0]]; ok {
			leaders[set[0]]++
		}
	}
	return replicas, leaders
}

// movable mirrors the balancer's rule, written out again.
func (m *balModel) movable(p BalancePartition) bool {
	if !p.Settled || p.Target != nil {
		return false
	}
	for _, id := range p.Replicas {
		if !m.broker(id).eligible() {
			return false
		}
	}
	return true
}

// checkMoves checks one round's moves against the state they were planned
// from.
func (m *balModel) checkMoves(t *rapid.T, moves []Move) {
	inFlight := 0
	for _, p := range m.in.Partitions {
		if !p.Settled {
			inFlight++
		}
	}
	replicaMoves, leaderMoves := 0, 0
	seen := map[int32]bool{}
	rack := m.racks()
	for _, mv := range moves {
		if seen[mv.Partition] {
			t.Fatalf("two moves of partition %d in one round: %v", mv.Partition, moves)
		}
		seen[mv.Partition] = true
		p := m.in.Partitions[mv.Partition]
		if !m.movable(p) || p.Epoch != mv.Epoch {
			t.Fatalf("move %v of a partition that may not move (%+v)", mv, p)
		}
		if !m.broker(mv.To).eligible() {
			t.Fatalf("move %v to a broker out of service", mv)
		}
		if mv.Leader() {
			leaderMoves++
			if p.Replicas[0] != mv.From || !slices.Contains(p.Replicas, mv.To) {
				t.Fatalf("leader move %v does not fit replicas %v", mv, p.Replicas)
			}
			continue
		}
		replicaMoves++
		pos := slices.Index(p.Replicas, mv.From)
		want := slices.Clone(p.Replicas)
		if pos >= 0 {
			want[pos] = mv.To
		}
		if pos < 0 || slices.Contains(p.Replicas, mv.To) || !slices.Equal(want, mv.Target) {
			t.Fatalf("replica move %v does not fit replicas %v", mv, p.Replicas)
		}
		if RackSpread(mv.Target, rack) < RackSpread(p.Replicas, rack) {
			t.Fatalf("move %v breaks rack spread (racks %v)", mv, rack)
		}
	}
	if replicaMoves+inFlight > max(m.in.MovesMax, inFlight) {
		t.Fatalf("%d replica moves with %d in flight exceed the bound %d", replicaMoves, inFlight, m.in.MovesMax)
	}
	if leaderMoves > 0 && (replicaMoves > 0 || inFlight > 0) {
		t.Fatalf("leader moves while replica moves are in flight: %v", moves)
	}
	if leaderMoves > m.in.MovesMax {
		t.Fatalf("%d leader moves exceed the bound %d", leaderMoves, m.in.MovesMax)
	}
}

// apply completes every move (and every walk in flight), as the partition
// leaders would.
func (m *balModel) apply(moves []Move) {
	for i := range m.in.Partitions {
		p := &m.in.Partitions[i]
		if p.Target != nil {
			p.Replicas, p.Target, p.Settled = p.Target, nil, true
			p.Epoch++
		}
	}
	for _, mv := range moves {
		p := &m.in.Partitions[mv.Partition]
		if mv.Leader() {
			p.Replicas = PreferOrder(p.Replicas, mv.To)
			continue
		}
		p.Replicas = slices.Clone(mv.Target)
		p.Epoch += 2
	}
}

// balance runs Plan to rest, checking every round.
func (m *balModel) balance(t *rapid.T) {
	for round := 0; ; round++ {
		if round > 2000 {
			t.Fatalf("no rest after %d rounds", round)
		}
		moves := Plan(m.in)
		m.checkMoves(t, moves)
		inFlight := false
		for _, p := range m.in.Partitions {
			inFlight = inFlight || !p.Settled
		}
		if len(moves) == 0 && !inFlight {
			return
		}
		m.apply(moves)
	}
}

// checkRest checks by brute force that no pair of eligible brokers two
// apart has a move left.
func (m *balModel) checkRest(t *rapid.T) {
	replicas, leaders := m.counts()
	rack := m.racks()
	for src, ns := range replicas { //floe:unordered each pair checked; a failure names its pair
		for dst, nd := range replicas { //floe:unordered as above
			if ns-nd < 2 {
				continue
			}
			for _, p := range m.in.Partitions {
				pos := slices.Index(p.Replicas, src)
				if !m.movable(p) || pos < 0 || slices.Contains(p.Replicas, dst) {
					continue
				}
				target := slices.Clone(p.Replicas)
				target[pos] = dst
				if RackSpread(target, rack) >= RackSpread(p.Replicas, rack) {
					t.Fatalf("at rest, but %d (%d replicas) could give partition %d to %d (%d)", src, ns, p.Index, dst, nd)
				}
			}
		}
	}
	for src, ns := range leaders { //floe:unordered as above
		for dst, nd := range leaders { //floe:unordered as above
			if ns-nd < 2 {
				continue
			}
			for _, p := range m.in.Partitions {
				if m.movable(p) && p.Replicas[0] == src && slices.Contains(p.Replicas, dst) {
					t.Fatalf("at rest, but %d (%d leaders) could hand partition %d to %d (%d)", src, ns, p.Index, dst, nd)
				}
			}
		}
	}
	if again := Plan(m.in); len(again) != 0 {
		t.Fatalf("balanced, yet Plan proposes %v", again)
	}
}

func spread(count map[int32]int) (lo, hi int) {
	first := true
	for _, n := range count { //floe:unordered min and max
		if first || n < lo {
			lo = n
		}
		if first || n > hi {
			hi = n
		}
		first = false
	}
	return lo, hi
}

// TestBalanceProperties: any drawn cluster (dead, decommissioned brokers,
// moves in flight, any racks): every round is safe and the rest is a
// local optimum.
func TestBalanceProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := genBalance(t, false, []string{"", "r1", "r2", "r3"}[:rapid.IntRange(1, 4).Draw(t, "racks")])
		m.balance(t)
		m.checkRest(t)
	})
}

// TestBalanceEvenWithoutRacks: with every broker in service and no rack
// constraint (one rack, or a rack each), replicas end within one of each
// other on every broker; with partitions of 2 or 3 replicas, preferred
// leaders end within two of each other (a leader move needs the two
// brokers to share a partition, so a difference of two can be a local
// rest).
func TestBalanceEvenWithoutRacks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		oneRack := rapid.Bool().Draw(t, "oneRack")
		racks := []string{""}
		if !oneRack {
			racks = []string{"r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9"}
		}
		rf := rapid.IntRange(2, 3).Draw(t, "rf")
		m := genBalanceRF(t, true, racks, rf)
		if !oneRack {
			for i := range m.in.Brokers {
				m.in.Brokers[i].Rack = racks[i]
			}
		}
		m.balance(t)
		m.checkRest(t)
		replicas, leaders := m.counts()
		if lo, hi := spread(replicas); hi-lo > 1 {
			t.Fatalf("replicas per broker %v: spread %d..%d", replicas, lo, hi)
		}
		if lo, hi := spread(leaders); hi-lo > 2 {
			t.Fatalf("leaders per broker %v: spread %d..%d", leaders, lo, hi)
		}
	})
}

// TestBalanceDeterministic: the same metadata gives the same moves,
// whatever order the brokers come in.
func TestBalanceDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := genBalance(t, false, []string{"", "r1", "r2"})
		a := Plan(m.in)
		shuffled := m.in
		shuffled.Brokers = rapid.Permutation(m.in.Brokers).Draw(t, "order")
		if b := Plan(shuffled); !reflect.DeepEqual(a, b) {
			t.Fatalf("moves depend on broker order:\n%v\n%v", a, b)
		}
	})
}

// TestBalanceJoin is the case: 3 brokers carry 30 partitions at
// RF=3, a 4th joins; at rest each holds 22 or 23 of the 90 replicas and 7
// or 8 preferred leaderships.
func TestBalanceJoin(t *testing.T) {
	s := NewState("c")
	for id := int32(1); id <= 3; id++ {
		s.Apply(&Command{RegisterBroker: &Broker{ID: id}})
	}
	ps, err := s.Place(30, 3, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := s.Apply(&Command{CreateTopic: &Topic{Name: "t", Partitions: ps}}); res.Err != nil {
		t.Fatal(res.Err)
	}
	s.Apply(&Command{RegisterBroker: &Broker{ID: 4}})
	alive := func(int32) bool { return true }
	for round := 0; round < 200; round++ {
		moves := Plan(s.BalanceInput(alive, 3))
		if len(moves) == 0 {
			break
		}
		for _, mv := range moves {
			if res := s.Apply(mv.Command(3)); res.Err != nil {
				t.Fatalf("round %d: %v: %v", round, mv, res.Err)
			}
			if !mv.Leader() {
				_, p, _ := s.PartitionByGroup(s.Topics["t"].Partitions[mv.Partition].Group)
				if !p.BalancerMove || s.BalancerMovesInFlight() == 0 {
					t.Fatalf("move %v not marked as the balancer's", mv)
				}
				// The walk completes: the partition's leader reports.
				res := s.Apply(&Command{SetReplicas: &SetReplicas{Group: p.Group, Replicas: p.Target, Epoch: p.ReassignEpoch}})
				if res.Err != nil || p.BalancerMove || p.Target != nil {
					t.Fatalf("walk of %v did not complete: %v", mv, res.Err)
				}
			}
		}
	}
	replicas, leaders := map[int32]int{}, map[int32]int{}
	for _, p := range s.Topics["t"].Partitions {
		for _, id := range p.Replicas {
			replicas[id]++
		}
		leaders[p.Replicas[0]]++
	}
	for id := int32(1); id <= 4; id++ {
		if replicas[id] < 22 || replicas[id] > 23 || leaders[id] < 7 || leaders[id] > 8 {
			t.Fatalf("after balancing: replicas %v leaders %v", replicas, leaders)
		}
	}
	if again := Plan(s.BalanceInput(alive, 3)); len(again) != 0 {
		t.Fatalf("balanced, yet Plan proposes %v", again)
	}
}

// TestBalancerCommandsRefuseStaleState: a balancer move planned from a
// state that changed since (an operator's move got in first, a target
// broker was decommissioned) is refused and changes nothing.
func TestBalancerCommandsRefuseStaleState(t *testing.T) {
	s := NewState("c")
	for id := int32(1); id <= 4; id++ {
		s.Apply(&Command{RegisterBroker: &Broker{ID: id}})
	}
	s.Apply(&Command{CreateTopic: &Topic{Name: "t", Partitions: []Partition{{Index: 0, Replicas: []int32{1, 2, 3}}}}})
	if res := s.Apply(&Command{Reassign: &Reassign{Topic: "t", Target: []int32{1, 2, 4}}}); res.Err != nil {
		t.Fatal(res.Err)
	}
	before := string(s.Snapshot())
	for _, c := range []*Command{
		{Reassign: &Reassign{Topic: "t", Target: []int32{4, 2, 3}, Balancer: true, IfEpoch: 0, MovesMax: 5}},
		{Prefer: &Prefer{Topic: "t", Leader: 2, Epoch: 0}},
		{Prefer: &Prefer{Topic: "t", Leader: 2, Epoch: 1}},
		{Prefer: &Prefer{Topic: "nope", Leader: 2}},
	} {
		if res := s.Apply(c); res.Err == nil {
			t.Fatalf("%s applied over an operator's move", c.Encode())
		}
	}
	g := s.Topics["t"].Partitions[0].Group
	s.Apply(&Command{SetReplicas: &SetReplicas{Group: g, Replicas: []int32{1, 2, 4}, Epoch: 1}})
	id := int32(3)
	s.Apply(&Command{Decommission: &id})
	before = string(s.Snapshot())
	for _, c := range []*Command{
		{Reassign: &Reassign{Topic: "t", Target: []int32{3, 2, 4}, Balancer: true, IfEpoch: 2, MovesMax: 5}},
		{Reassign: &Reassign{Topic: "t", Target: []int32{1, 2, 3}, Balancer: true, IfEpoch: 2}}, // bound 0
		{Reassign: &Reassign{Topic: "t", Target: []int32{1, 2, 3}, Balancer: true, IfEpoch: 2, MovesMax: -1}},
		{Prefer: &Prefer{Topic: "t", Leader: 3, Epoch: 2}},
		{Prefer: &Prefer{Topic: "t", Leader: 3, Epoch: 2}},
	} {
		res := s.Apply(c)
		if res.Err == nil || string(s.Snapshot()) != before {
			t.Fatalf("%s: err %v, state changed: %v", c.Encode(), res.Err, string(s.Snapshot()) != before)
		}
	}
	if res := s.Apply(&Command{Prefer: &Prefer{Topic: "t", Leader: 4, Epoch: 2}}); res.Err != nil {
		t.Fatalf("prefer: %v", res.Err)
	}
	if got := s.Topics["t"].Partitions[0].Replicas; !slices.Equal(got, []int32{4, 1, 2}) {
		t.Fatalf("prefer 4: replicas %v", got)
	}
}

func TestParseBalanceMode(t *testing.T) {
	for in, want := range map[string]string{"off": "off", "count": "count", "": "count", "load": "load"} { //floe:unordered independent cases
		m, err := ParseBalanceMode(in)
		if err != nil || m.String() != want {
			t.Errorf("%q: %v %v", in, m, err)
		}
	}
	for _, bad := range []string{"on", "COUNT", "bytes"} {
		if _, err := ParseBalanceMode(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	_ = fmt.Sprint(kerr.ReassignmentInProgress)
}

// TestDecommissionRefusedWhenReplicasCannotMove: decommissioning the last
// broker of a rack that a partition needs, or a broker whose replicas have
// nowhere to go, gets a clear error and changes nothing.
func TestDecommissionRefusedWhenReplicasCannotMove(t *testing.T) {
	s := NewState("c")
	for id, rack := range []string{"r1", "r2", "r3", "r1"} {
		s.Apply(&Command{RegisterBroker: &Broker{ID: int32(id + 1), Rack: rack}})
	}
	s.Apply(&Command{CreateTopic: &Topic{Name: "t", Partitions: []Partition{{Index: 0, Replicas: []int32{1, 2, 3}}}}})
	before := string(s.Snapshot())
	three := int32(3)
	res := s.Apply(&Command{Decommission: &three})
	var ce *Error
	if res.Err == nil || !errorsAs(res.Err, &ce) || !strings.Contains(ce.Message, `last broker in service in rack "r3"`) {
		t.Fatalf("decommission of r3's only broker: %v", res.Err)
	}
	if string(s.Snapshot()) != before {
		t.Fatal("a refused decommission changed the state")
	}
	one := int32(1)
	if res := s.Apply(&Command{Decommission: &one}); res.Err != nil {
		t.Fatalf("decommission of broker 1, whose rack has broker 4: %v", res.Err)
	}
	// Racks gone: three brokers left in service for three replicas.
	s2 := NewState("c")
	for id := int32(1); id <= 3; id++ {
		s2.Apply(&Command{RegisterBroker: &Broker{ID: id}})
	}
	s2.Apply(&Command{CreateTopic: &Topic{Name: "t", Partitions: []Partition{{Index: 0, Replicas: []int32{1, 2, 3}}}}})
	if res := s2.Apply(&Command{Decommission: &one}); res.Err == nil || !strings.Contains(res.Err.Error(), "no other broker in service") {
		t.Fatalf("decommission with nowhere to move: %v", res.Err)
	}
}

func errorsAs(err error, target **Error) bool {
	e, ok := err.(*Error)
	*target = e
	return ok
}
