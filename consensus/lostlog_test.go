package consensus

import "testing"

// pair is two RawNodes wired together; pump delivers messages until none
// are left and returns the entry bytes delivered to member 2.
type pair struct {
	rn [3]*RawNode
	ms [3]*MemoryStorage
}

func newPair(t *testing.T) *pair {
	p := &pair{}
	for id := uint64(1); id <= 2; id++ {
		p.rn[id], p.ms[id] = newTestRawNode(t, id, 1, 2)
	}
	p.rn[1].Campaign()
	p.pump(t)
	if p.rn[1].Status().RaftState != StateLeader {
		t.Fatal("node 1 did not become leader")
	}
	return p
}

func (p *pair) pump(t *testing.T) (toTwo uint64) {
	t.Helper()
	for round := 0; round < 1000; round++ {
		var msgs []Message
		for id := uint64(1); id <= 2; id++ {
			if !p.rn[id].HasReady() {
				continue
			}
			rd := persistAndAdvance(t, p.rn[id], p.ms[id])
			msgs = append(msgs, rd.Messages...)
			msgs = append(msgs, rd.MessagesAfterPersist...)
		}
		if len(msgs) == 0 {
			return toTwo
		}
		for _, m := range msgs {
			if m.To == 2 && m.Type == MsgApp {
				toTwo += payloadBytes(m.Entries)
			}
			if err := p.rn[m.To].Step(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Fatal("messages still flowing after 1000 rounds")
	return toTwo
}

// TestMemberWithLostLogCatchesUp: a member that comes back with an empty
// log (its disk replaced) under the same id is caught up by the leader it
// had acknowledged entries to, not only by a later one.
func TestMemberWithLostLogCatchesUp(t *testing.T) {
	p := newPair(t)
	for i := 0; i < 20; i++ {
		if _, _, err := p.rn[1].Propose(EntryNormal, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	p.pump(t)
	last := progressOf(p.rn[1], 2).Match
	if last < 20 {
		t.Fatalf("member 2 matched %d before the loss", last)
	}
	// Member 2 loses its disk and starts empty.
	p.rn[2], p.ms[2] = newTestRawNode(t, 2, 1, 2)
	for tick := 0; tick < 50; tick++ {
		p.rn[1].Tick()
		p.pump(t)
		if li, _ := p.ms[2].LastIndex(); li >= last {
			return
		}
	}
	li, _ := p.ms[2].LastIndex()
	t.Fatalf("member 2 holds %d entries of %d after 50 ticks of the same leader (progress %+v)", li, last, progressOf(p.rn[1], 2))
}

func progressOf(rn *RawNode, id uint64) PeerProgress {
	for _, pr := range rn.Status().Progress {
		if pr.ID == id {
			return pr
		}
	}
	return PeerProgress{}
}
