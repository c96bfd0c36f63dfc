package controller

import (
	"fmt"
	"slices"
	"sort"

	"github.com/floe-broker/floe/internal/plant"
)

// Continuous balancing (issue 23). The controller's leader asks Plan, every
// few ticks, for the next moves that even out the cluster, and proposes
// them as ordinary commands: a replica move is a Reassign (the partition's
// leader then walks its Raft group there, node/reassign.go), a leader move
// is a Prefer (the new preferred replica takes leadership at the next
// preferred-leader transfer). Plan is a pure function of its input: no
// clock, no randomness, no map order, so every controller leader given the
// same metadata proposes the same moves, and a test can drive it with a
// model of the cluster.
//
// What it evens out, in order:
//
//  1. replicas per broker: while two eligible brokers differ by two or
//     more replicas, one replica of a partition on the fuller broker moves
//     to the emptier one, provided the partition's replicas then span at
//     least as many racks as before (so a move never puts two replicas of
//     a partition in one rack when the racks allow otherwise);
//  2. preferred leaders per broker: once no replica move is in flight, while
//     two eligible brokers differ by two or more preferred leaderships, a
//     partition led (preferred) by the fuller one and replicated on the
//     emptier one makes the emptier one its preferred leader;
//  3. with --balancer load, bytes on disk per broker: once goals 1 and 2
//     have nothing to move, a replica moves from a heavier broker to a
//     lighter one (see loadMove) when the cluster's load spread is past
//     LoadSpreadPct of the mean and the move shrinks the pair's gap by at
//     least LoadMarginPct of the mean (hysteresis). A broker's load is the
//     sum of the sizes its partitions' leaders last reported (Partition.Bytes,
//     ReportSizes), over the partitions it holds or is moving onto.
//     A load move never changes goal 1 or goal 2: it goes only from a broker
//     holding more replicas than the destination (the two swap which one
//     holds the extra replica, so the sum of squares stays the same), and
//     moves a preferred leadership only between brokers whose leader counts
//     differ the same way. So the triple (sum of squares of replicas,
//     of leaders, of loads) drops lexicographically with every move, and
//     on an input that does not change balancing stops; a move and its
//     reverse can never both shrink the loads' sum of squares (no flapping).
//
// Each move strictly lowers the sum of squares of the per-broker counts, so
// repeated balancing stops; at rest no pair of brokers differs by two with
// a move left that would not break rack spread, so a balanced cluster gets
// no proposal (no flapping). A difference of one is left alone: moving it
// would only swap which broker holds the extra replica.
//
// Not moved: a partition with a reassignment in flight or being walked
// back (not Settled), and a partition with a replica on a broker that is
// down or decommissioned (decommissioned ones are evacuated, node/reassign.go;
// a down one is Raft's business, and moving its partitions now would be
// undone when it returns). Down and decommissioned brokers never receive a
// replica.

// BalanceMode says what the balancer evens out.
type BalanceMode int

// Balancer modes.
const (
	BalanceOff   BalanceMode = iota // no balancing
	BalanceCount                    // replicas, then preferred leaders, per broker
	BalanceLoad                     // count, then bytes on disk per broker
)

// Load hysteresis defaults (percent of the mean load per eligible broker).
const (
	LoadSpreadPctDefault = 10 // act only while max-min load exceeds this
	LoadMarginPctDefault = 5  // a move must shrink its pair's gap by this
)

// ParseBalanceMode parses --balancer's value.
func ParseBalanceMode(s string) (BalanceMode, error) {
	switch s {
	case "off":
		return BalanceOff, nil
	case "count", "":
		return BalanceCount, nil
	case "load":
		return BalanceLoad, nil
	}
	return BalanceOff, fmt.Errorf("--balancer %q: want off, count or load", s)
}

func (m BalanceMode) String() string {
	switch m {
	case BalanceCount:
		return "count"
	case BalanceLoad:
		return "load"
	}
	return "off"
}

// BalanceBroker is one registered broker as the balancer sees it.
type BalanceBroker struct {
	ID   int32
	Rack string
	// Alive: the controller's leader hears from it (it is recently active
	// in the controller group).
	Alive          bool
	Decommissioned bool
}

func (b BalanceBroker) eligible() bool { return b.Alive && !b.Decommissioned }

// BalancePartition is one partition as the balancer sees it.
type BalancePartition struct {
	Topic    string
	Index    int32
	Epoch    int32   // ReassignEpoch; a move is proposed for this epoch only
	Replicas []int32 // preferred leader first
	Target   []int32 // non-nil while a reassignment is in flight
	Settled  bool
	Bytes    int64 // the size its leader last reported (load goal)
}

// BalanceInput is everything Plan decides from.
type BalanceInput struct {
	Brokers    []BalanceBroker // any order; Plan sorts by id
	Partitions []BalancePartition
	// MovesMax bounds the replica moves in flight at once, the ones
	// already in flight (any reassignment) included, and the leader moves
	// proposed in one round.
	MovesMax int
	// Load turns on goal 3 (bytes on disk); LoadSpreadPct and
	// LoadMarginPct are its hysteresis (0: the defaults).
	Load                         bool
	LoadSpreadPct, LoadMarginPct int
}

// Move is one proposed change to a partition.
type Move struct {
	Topic     string
	Partition int32
	Epoch     int32 // the ReassignEpoch the move was planned at
	// Target is the new replica set of a replica move (From replaced by To
	// in place); nil for a leader move.
	Target []int32
	// From and To: the broker giving up the replica (or preferred
	// leadership) and the one taking it.
	From, To int32
}

// Leader reports whether m is a preferred-leader move.
func (m Move) Leader() bool { return m.Target == nil }

func (m Move) String() string {
	if m.Leader() {
		return fmt.Sprintf("%s/%d leader %d->%d", m.Topic, m.Partition, m.From, m.To)
	}
	return fmt.Sprintf("%s/%d replica %d->%d target %v", m.Topic, m.Partition, m.From, m.To, m.Target)
}

// InputFrom builds the balancer's input from the metadata; alive reports
// whether a broker is heard from.
func (s *State) BalanceInput(alive func(id int32) bool, movesMax int) BalanceInput {
	return s.BalanceInputMode(alive, movesMax, BalanceCount)
}

// BalanceInputMode is BalanceInput for a mode (load turns goal 3 on).
func (s *State) BalanceInputMode(alive func(id int32) bool, movesMax int, mode BalanceMode) BalanceInput {
	in := BalanceInput{MovesMax: movesMax, Load: mode == BalanceLoad}
	for _, id := range s.BrokerIDs() {
		b := s.Brokers[id]
		in.Brokers = append(in.Brokers, BalanceBroker{ID: id, Rack: b.Rack, Alive: alive(id), Decommissioned: b.Decommissioned})
	}
	for _, name := range s.TopicNames() {
		for _, p := range s.Topics[name].Partitions {
			in.Partitions = append(in.Partitions, BalancePartition{
				Topic: name, Index: p.Index, Epoch: p.ReassignEpoch,
				Replicas: slices.Clone(p.Replicas), Target: slices.Clone(p.Target), Settled: p.Settled(),
				Bytes: p.Bytes,
			})
		}
	}
	return in
}

// balancer is one Plan call's working state.
type balancer struct {
	in       BalanceInput
	ids      []int32 // eligible brokers, by id
	rack     map[int32]string
	ok       map[int32]bool  // eligible
	replicas map[int32]int   // replicas per broker, moves planned so far included
	leaders  map[int32]int   // preferred leaderships per broker
	load     map[int32]int64 // reported bytes per broker
	used     map[int]bool    // partitions (by input position) already moved this round
	out      []Move
}

// Plan proposes the next moves (see the comment at the top of this file).
// It returns none while MovesMax replica moves are in flight.
func Plan(in BalanceInput) []Move {
	b := newBalancer(in)
	inFlight := 0
	for _, p := range in.Partitions {
		if !p.Settled {
			inFlight++
		}
	}
	budget := in.MovesMax - inFlight
	for budget > 0 {
		m, ok := b.replicaMove()
		if !ok {
			break
		}
		b.out = append(b.out, m)
		budget--
	}
	if len(b.out) > 0 {
		return b.out
	}
	if inFlight == 0 {
		for n := 0; n < in.MovesMax; n++ {
			m, ok := b.leaderMove()
			if !ok {
				break
			}
			b.out = append(b.out, m)
		}
	}
	if len(b.out) > 0 || !in.Load {
		return b.out
	}
	for budget > 0 {
		m, ok := b.loadMove()
		if !ok {
			break
		}
		b.out = append(b.out, m)
		budget--
	}
	return b.out
}

func newBalancer(in BalanceInput) *balancer {
	b := &balancer{in: in, rack: map[int32]string{}, ok: map[int32]bool{},
		replicas: map[int32]int{}, leaders: map[int32]int{}, load: map[int32]int64{}, used: map[int]bool{}}
	brokers := slices.Clone(in.Brokers)
	sort.Slice(brokers, func(i, j int) bool { return brokers[i].ID < brokers[j].ID })
	for _, br := range brokers {
		b.rack[br.ID] = br.Rack
		if br.eligible() {
			b.ids = append(b.ids, br.ID)
			b.ok[br.ID] = true
		}
	}
	for _, p := range in.Partitions {
		set := p.Replicas
		if p.Target != nil {
			set = p.Target
		}
		for _, id := range set {
			b.replicas[id]++
			b.load[id] += max(p.Bytes, 0)
		}
		if len(set) > 0 {
			b.leaders[set[0]]++
		}
	}
	return b
}

// movable reports whether partition i may be moved this round.
func (b *balancer) movable(i int) bool {
	p := b.in.Partitions[i]
	if b.used[i] || !p.Settled || p.Target != nil || len(p.Replicas) == 0 {
		return false
	}
	for _, id := range p.Replicas {
		if !b.ok[id] {
			return false
		}
	}
	return true
}

// byCount returns the eligible brokers ordered by count, fullest first
// (ties: lower id first).
func (b *balancer) byCount(count map[int32]int) []int32 {
	ids := slices.Clone(b.ids)
	sort.SliceStable(ids, func(i, j int) bool { return count[ids[i]] > count[ids[j]] })
	return ids
}

// replicaMove finds the next replica move, fullest source and emptiest
// destination first.
func (b *balancer) replicaMove() (Move, bool) {
	order := b.byCount(b.replicas)
	for _, src := range order {
		for k := len(order) - 1; k >= 0; k-- {
			dst := order[k]
			if b.replicas[src]-b.replicas[dst] < 2 {
				break
			}
			if m, ok := b.replicaMoveBetween(src, dst); ok {
				return m, true
			}
		}
	}
	return Move{}, false
}

// replicaMoveBetween moves one replica from src to dst, preferring a
// partition src does not lead (no leadership change).
func (b *balancer) replicaMoveBetween(src, dst int32) (Move, bool) {
	for pass := 0; pass < 2; pass++ {
		for i, p := range b.in.Partitions {
			if !b.movable(i) || slices.Contains(p.Replicas, dst) {
				continue
			}
			pos := slices.Index(p.Replicas, src)
			if pos < 0 || (pass == 0 && pos == 0) {
				continue
			}
			target := slices.Clone(p.Replicas)
			target[pos] = dst
			if RackSpread(target, b.rack) < RackSpread(p.Replicas, b.rack) {
				continue
			}
			b.used[i] = true
			b.replicas[src]--
			b.replicas[dst]++
			if pos == 0 {
				b.leaders[src]--
				b.leaders[dst]++
			}
			return Move{Topic: p.Topic, Partition: p.Index, Epoch: p.Epoch, Target: target, From: src, To: dst}, true
		}
	}
	return Move{}, false
}

// leaderMove finds the next preferred-leader move.
func (b *balancer) leaderMove() (Move, bool) {
	order := b.byCount(b.leaders)
	for _, src := range order {
		for k := len(order) - 1; k >= 0; k-- {
			dst := order[k]
			if b.leaders[src]-b.leaders[dst] < 2 {
				break
			}
			for i, p := range b.in.Partitions {
				if !b.movable(i) || p.Replicas[0] != src || !slices.Contains(p.Replicas, dst) {
					continue
				}
				b.used[i] = true
				b.leaders[src]--
				b.leaders[dst]++
				return Move{Topic: p.Topic, Partition: p.Index, Epoch: p.Epoch, From: src, To: dst}, true
			}
		}
	}
	return Move{}, false
}

// loadMove finds the next load move (goal 3): while the spread of load
// over the eligible brokers exceeds LoadSpreadPct of the mean, the move
// between a heavier src and a lighter dst (src holding more replicas than
// dst, so goal 1 is unchanged) that shrinks their gap the most, provided
// it shrinks it by at least LoadMarginPct of the mean. Heaviest pairs are
// tried first; ties go to the lower id and the earlier partition.
func (b *balancer) loadMove() (Move, bool) {
	if len(b.ids) < 2 {
		return Move{}, false
	}
	spreadPct, marginPct := b.in.LoadSpreadPct, b.in.LoadMarginPct
	if spreadPct <= 0 {
		spreadPct = LoadSpreadPctDefault
	}
	if marginPct <= 0 {
		marginPct = LoadMarginPctDefault
	}
	var total int64
	for _, id := range b.ids {
		total += b.load[id]
	}
	order := slices.Clone(b.ids)
	sort.SliceStable(order, func(i, j int) bool { return b.load[order[i]] > b.load[order[j]] })
	hi, lo := b.load[order[0]], b.load[order[len(order)-1]]
	n := int64(len(b.ids))
	// spread > spreadPct% of mean  <=>  100*n*spread > spreadPct*total
	if 100*n*(hi-lo) <= int64(spreadPct)*total && !plant.Enabled(plant.BalancerLoadFlaps) {
		return Move{}, false
	}
	margin := (int64(marginPct)*total + 100*n - 1) / (100 * n) // ceil(marginPct% of mean)
	margin = max(margin, 1)
	for _, src := range order {
		for k := len(order) - 1; k >= 0; k-- {
			dst := order[k]
			gap := b.load[src] - b.load[dst]
			if gap <= 0 {
				break
			}
			if b.replicas[src] <= b.replicas[dst] {
				continue
			}
			if m, ok := b.loadMoveBetween(src, dst, gap, margin); ok {
				return m, true
			}
		}
	}
	return Move{}, false
}

// loadMoveBetween picks the partition whose move from src to dst shrinks
// their load gap the most, by at least margin.
func (b *balancer) loadMoveBetween(src, dst int32, gap, margin int64) (Move, bool) {
	best, bestPos, bestGain := -1, 0, int64(0)
	for i, p := range b.in.Partitions {
		if !b.movable(i) || slices.Contains(p.Replicas, dst) {
			continue
		}
		pos := slices.Index(p.Replicas, src)
		if pos < 0 || (pos == 0 && b.leaders[src] <= b.leaders[dst]) {
			continue
		}
		target := slices.Clone(p.Replicas)
		target[pos] = dst
		if RackSpread(p.Replicas, b.rack) > RackSpread(target, b.rack) {
			continue
		}
		after := gap - 2*max(p.Bytes, 0)
		if after < 0 {
			after = -after
		}
		gain := gap - after
		// The planted bug: no hysteresis, any move off the heavier broker
		// counts (the best one it finds, even if it widens the gap).
		ok := gain >= margin || plant.Enabled(plant.BalancerLoadFlaps)
		if ok && (best < 0 || gain > bestGain) {
			best, bestPos, bestGain = i, pos, gain
		}
	}
	if best < 0 {
		return Move{}, false
	}
	p := b.in.Partitions[best]
	target := slices.Clone(p.Replicas)
	target[bestPos] = dst
	b.used[best] = true
	b.replicas[src]--
	b.replicas[dst]++
	b.load[src] -= max(p.Bytes, 0)
	b.load[dst] += max(p.Bytes, 0)
	if bestPos == 0 {
		b.leaders[src]--
		b.leaders[dst]++
	}
	return Move{Topic: p.Topic, Partition: p.Index, Epoch: p.Epoch, Target: target, From: src, To: dst}, true
}

// RackSpread is how many distinct racks the replicas span (a broker the
// rack map does not know counts as its own rack).
func RackSpread(replicas []int32, rack map[int32]string) int {
	seen := map[string]bool{}
	n := 0
	for _, id := range replicas {
		r, ok := rack[id]
		key := "rack:" + r
		if !ok {
			key = fmt.Sprintf("broker:%d", id)
		}
		if !seen[key] {
			seen[key] = true
			n++
		}
	}
	return n
}

// PreferOrder returns replicas with to moved first (the rest in order).
func PreferOrder(replicas []int32, to int32) []int32 {
	out := []int32{to}
	for _, id := range replicas {
		if id != to {
			out = append(out, id)
		}
	}
	return out
}
