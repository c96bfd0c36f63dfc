package consensus

import (
	"math/rand"
	"testing"
)

// roleNet is three members with durable-at-once storage and a network that
// delivers everything sent, unless the sender or receiver is cut off.
type roleNet struct {
	nodes    map[uint64]*RawNode
	stores   map[uint64]*MemoryStorage
	counters map[uint64]*RoleCounters
	cut      map[uint64]bool
}

func newRoleNet(t *testing.T) *roleNet {
	t.Helper()
	n := &roleNet{nodes: map[uint64]*RawNode{}, stores: map[uint64]*MemoryStorage{},
		counters: map[uint64]*RoleCounters{}, cut: map[uint64]bool{}}
	for id := uint64(1); id <= 3; id++ {
		ms := NewMemoryStorage()
		ms.SetConfState(ConfState{Voters: []uint64{1, 2, 3}})
		n.counters[id] = &RoleCounters{}
		rn, err := NewRawNode(Config{ID: id, ElectionTicks: 10, HeartbeatTicks: 1, Storage: ms,
			MaxSizePerMsg: 1 << 20, Rand: rand.New(rand.NewSource(int64(id))),
			CheckQuorum: true, PreVote: true, Counters: n.counters[id]})
		if err != nil {
			t.Fatal(err)
		}
		n.nodes[id], n.stores[id] = rn, ms
	}
	return n
}

// settle runs Ready loops and delivers messages until nothing moves.
func (n *roleNet) settle(t *testing.T) {
	t.Helper()
	for range 1000 {
		var msgs []Message
		for id := uint64(1); id <= 3; id++ {
			rn := n.nodes[id]
			if !rn.HasReady() {
				continue
			}
			rd := persistAndAdvance(t, rn, n.stores[id])
			msgs = append(msgs, rd.Messages...)
			msgs = append(msgs, rd.MessagesAfterPersist...)
		}
		if len(msgs) == 0 {
			return
		}
		for _, m := range msgs {
			if n.cut[m.From] || n.cut[m.To] || n.nodes[m.To] == nil {
				continue
			}
			_ = n.nodes[m.To].Step(m)
		}
	}
	t.Fatal("did not settle")
}

func (n *roleNet) tick(t *testing.T, ticks int) {
	t.Helper()
	for range ticks {
		for id := uint64(1); id <= 3; id++ {
			n.nodes[id].Tick()
		}
		n.settle(t)
	}
}

func (n *roleNet) leader() uint64 {
	for id, rn := range n.nodes {
		if rn.BasicStatus().RaftState == StateLeader {
			return id
		}
	}
	return 0
}

// The role counters say why leadership moved (issue 21): a follower's
// election timeout, a leader's check-quorum, a later term, a transfer.
func TestRoleCounters(t *testing.T) {
	n := newRoleNet(t)
	n.nodes[1].Campaign()
	n.settle(t)
	if n.leader() != 1 {
		t.Fatalf("leader %d, want 1", n.leader())
	}
	if c := *n.counters[1]; c != (RoleCounters{}) {
		t.Fatalf("an asked-for campaign counted: %+v", c)
	}
	// The leader is cut off: it steps down by check-quorum, and a follower
	// campaigns after its election timeout and wins.
	n.cut[1] = true
	n.tick(t, 40)
	if got := n.counters[1].StepDownsCheckQuorum; got != 1 {
		t.Fatalf("check-quorum step-downs %d, want 1 (%+v)", got, *n.counters[1])
	}
	lead := n.leader()
	if lead == 1 || lead == 0 {
		t.Fatalf("leader %d after 1 was cut off", lead)
	}
	if got := n.counters[2].CampaignsTimeout + n.counters[3].CampaignsTimeout; got == 0 {
		t.Fatalf("no timeout campaign counted: %+v %+v", *n.counters[2], *n.counters[3])
	}
	// The new leader hands over to the other follower: one transfer
	// campaign there, and a step-down by a later term on the old leader.
	n.cut[1] = false
	n.tick(t, 2)
	to := 5 - lead // lead is 2 or 3: the other follower
	n.nodes[lead].TransferLeader(to)
	n.settle(t)
	if n.leader() != to {
		t.Fatalf("leader %d after a transfer to %d", n.leader(), to)
	}
	if got := n.counters[to].CampaignsTransfer; got != 1 {
		t.Fatalf("transfer campaigns on %d: %d, want 1", to, got)
	}
	if got := n.counters[lead].StepDownsHigherTerm; got != 1 {
		t.Fatalf("higher-term step-downs on %d: %d, want 1 (%+v)", lead, got, *n.counters[lead])
	}
}
