package consensus

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// TestVoterChangeModel is a property test of membership changes against a
// model. Random seeds drive a 5-member group (voters 1..3, learners 4 and
// 5) through ticks, partial message delivery, isolation, data proposals,
// raw membership changes (as node/reassign.go makes them) and operator
// voter changes (PlanVoterChange, as AddRaftVoter and RemoveRaftVoter
// make them). After every step:
//
//   - each member's membership is the model's: its snapshot's membership
//     with every configuration entry up to its applied index replayed
//     (ConfState.Apply), and each of those steps changes the voter set by
//     at most one member;
//   - a leader holds at most one configuration entry it has not applied;
//   - members agree on the terms of the entries both have committed, and
//     no term has two leaders;
//   - a removal PlanVoterChange allowed left a voter set with a live
//     majority as the leader saw it.
func TestVoterChangeModel(t *testing.T) {
	seeds := 100
	if testing.Short() {
		seeds = 20
	}
	var total voterModelStats
	for seed := int64(1); seed <= int64(seeds); seed++ {
		st, err := runVoterModel(seed, 400)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		total.allowed += st.allowed
		total.applied += st.applied
		total.terms += st.terms
	}
	// The run must have exercised what it checks.
	if total.allowed < seeds || total.applied < seeds || total.terms < seeds {
		t.Fatalf("too little happened: %+v in %d seeds", total, seeds)
	}
	t.Logf("%d seeds: %+v", seeds, total)
}

type voterModelStats struct {
	allowed int // voter changes PlanVoterChange allowed
	applied int // configuration entries the model replayed on member 1
	terms   int // distinct terms with a leader
}

func newVoterModelEnv() (*scenarioEnv, error) {
	env := &scenarioEnv{cut: map[[2]uint64]bool{}}
	cs := ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4, 5}}
	for i := 0; i < 5; i++ {
		n := &scenarioNode{id: uint64(i + 1), applied: 10}
		n.storage = &scenarioStorage{MemoryStorage: NewMemoryStorage(), node: n}
		if err := n.storage.ApplySnapshot(Snapshot{Meta: SnapshotMeta{Index: 10, Term: 1, ConfState: cs}}); err != nil {
			return nil, err
		}
		n.cfg = Config{ID: n.id, ElectionTicks: 6, HeartbeatTicks: 1, MaxSizePerMsg: 1 << 20,
			MaxInflightMsgs: 16, CheckQuorum: true, PreVote: true, Rand: rand.New(rand.NewSource(int64(n.id)))}
		env.nodes = append(env.nodes, n)
		if out := env.restart(nil, n); out != "" {
			return nil, fmt.Errorf("%s", out)
		}
	}
	return env, nil
}

func runVoterModel(seed int64, steps int) (voterModelStats, error) {
	var stats voterModelStats
	rng := rand.New(rand.NewSource(seed))
	env, err := newVoterModelEnv()
	if err != nil {
		return stats, err
	}
	leaders := map[uint64]uint64{} // term -> leader
	for step := 0; step < steps; step++ {
		n := env.nodes[rng.Intn(len(env.nodes))]
		switch x := rng.Intn(100); {
		case x < 30:
			n.rn.Tick()
		case x < 55:
			if n.rn.HasReady() {
				env.processReady(n)
			}
			env.deliver(n.id)
		case x < 65:
			env.stabilize([]uint64{1, 2, 3, 4, 5})
		case x < 70:
			if rng.Intn(2) == 0 {
				env.heal()
			} else {
				for _, o := range env.nodes {
					env.cut[[2]uint64{n.id, o.id}] = true
					env.cut[[2]uint64{o.id, n.id}] = true
				}
			}
		case x < 80:
			_, _, _ = n.rn.Propose(EntryNormal, []byte("x"))
		case x < 85:
			typ := []ConfChangeType{ConfAddVoter, ConfAddLearner}[rng.Intn(2)]
			_, _, _ = n.rn.ProposeConfChange(ConfChange{Type: typ, NodeID: uint64(1 + rng.Intn(5))})
		default:
			ok, err := voterModelOperator(rng, n)
			if err != nil {
				return stats, fmt.Errorf("step %d: %w", step, err)
			}
			if ok {
				stats.allowed++
			}
		}
		if err := checkVoterModel(env, leaders); err != nil {
			return stats, fmt.Errorf("step %d: %w", step, err)
		}
	}
	stats.terms = len(leaders)
	for _, e := range entriesOf(env.nodes[0], 11, env.nodes[0].applied) {
		if e.Type == EntryConfChange {
			stats.applied++
		}
	}
	return stats, nil
}

// voterModelOperator asks n for a voter change and checks an allowed
// removal against the model's idea of a live quorum.
func voterModelOperator(rng *rand.Rand, n *scenarioNode) (bool, error) {
	st := n.rn.Status()
	op := []VoterOp{VoterAdd, VoterRemove}[rng.Intn(2)]
	id := uint64(1 + rng.Intn(5))
	cc, err := PlanVoterChange(st, op, id)
	if err != nil {
		return false, nil
	}
	if op == VoterRemove {
		live := 0
		left := 0
		for _, p := range st.Progress {
			if p.IsLearner || p.ID == id {
				continue
			}
			left++
			if p.RecentActive || p.ID == st.ID {
				live++
			}
		}
		if left == 0 || 2*live <= left {
			return false, fmt.Errorf("removal of %d allowed with %d of %d remaining voters live", id, live, left)
		}
	}
	_, _, _ = n.rn.ProposeConfChange(cc)
	return true, nil
}

func checkVoterModel(env *scenarioEnv, leaders map[uint64]uint64) error {
	for _, n := range env.nodes {
		st := n.rn.Status()
		if st.RaftState == StateLeader {
			if l, ok := leaders[st.Term]; ok && l != n.id {
				return fmt.Errorf("two leaders in term %d: %d and %d", st.Term, l, n.id)
			}
			leaders[st.Term] = n.id
			if c := unappliedConfEntries(n, st); c > 1 {
				return fmt.Errorf("leader %d holds %d configuration entries it has not applied", n.id, c)
			}
		}
		if err := modelConf(n, st); err != nil {
			return err
		}
		for _, o := range env.nodes {
			if err := sameCommitted(n, o); err != nil {
				return err
			}
		}
	}
	return nil
}

func entriesOf(n *scenarioNode, lo, hi uint64) []Entry {
	if hi < lo {
		return nil
	}
	es, err := n.storage.MemoryStorage.Entries(lo, hi+1, 1<<30)
	if err != nil {
		return nil
	}
	return es
}

func unappliedConfEntries(n *scenarioNode, st Status) int {
	c := 0
	for i := st.Applied + 1; i <= st.LastIndex; i++ {
		e, err := n.rn.raft.log.slice(i, i+1, 1<<30)
		if err == nil && len(e) == 1 && e[0].Type == EntryConfChange {
			c++
		}
	}
	return c
}

// modelConf replays n's configuration entries from its snapshot to its
// applied index and compares the result with n's membership.
func modelConf(n *scenarioNode, st Status) error {
	snap, err := n.storage.MemoryStorage.Snapshot()
	if err != nil {
		return err
	}
	cs := snap.Meta.ConfState
	for _, e := range entriesOf(n, snap.Meta.Index+1, n.applied) {
		if e.Type != EntryConfChange {
			continue
		}
		cc, err := UnmarshalConfChange(e.Data)
		if err != nil {
			return err
		}
		next := cs.Apply(cc)
		if d := symDiff(cs.Voters, next.Voters); d > 1 {
			return fmt.Errorf("member %d: entry %d changes %d voters at once (%v to %v)", n.id, e.Index, d, cs.Voters, next.Voters)
		}
		cs = next
	}
	if !slices.Equal(cs.Voters, st.Config.Voters) || !slices.Equal(cs.Learners, st.Config.Learners) {
		return fmt.Errorf("member %d at applied %d: membership %v, model %v", n.id, n.applied, st.Config, cs)
	}
	return nil
}

func symDiff(a, b []uint64) int {
	d := 0
	for _, x := range a {
		if !slices.Contains(b, x) {
			d++
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			d++
		}
	}
	return d
}

func sameCommitted(a, b *scenarioNode) error {
	ca, cb := a.rn.BasicStatus().Commit, b.rn.BasicStatus().Commit
	hi := min(ca, cb)
	lo := max(a.rn.raft.log.firstIndex(), b.rn.raft.log.firstIndex())
	for i := lo; i <= hi; i++ {
		ta, errA := a.rn.TermAt(i)
		tb, errB := b.rn.TermAt(i)
		if errA == nil && errB == nil && ta != tb {
			return fmt.Errorf("committed entry %d has term %d on %d, %d on %d", i, ta, a.id, tb, b.id)
		}
	}
	return nil
}
