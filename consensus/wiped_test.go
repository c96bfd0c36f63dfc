package consensus

import (
	"bytes"
	"testing"
)

// trio is three RawNodes wired together, some of them down (their
// messages, both ways, are dropped).
type trio struct {
	rn   [4]*RawNode
	ms   [4]*MemoryStorage
	down [4]bool
}

func newTrio(t *testing.T) *trio {
	tr := &trio{}
	for id := uint64(1); id <= 3; id++ {
		tr.rn[id], tr.ms[id] = newTestRawNode(t, id, 1, 2, 3)
	}
	return tr
}

func (tr *trio) pump(t *testing.T) {
	t.Helper()
	for round := 0; round < 1000; round++ {
		var msgs []Message
		for id := uint64(1); id <= 3; id++ {
			if tr.down[id] || !tr.rn[id].HasReady() {
				continue
			}
			rd := persistAndAdvance(t, tr.rn[id], tr.ms[id])
			msgs = append(msgs, rd.Messages...)
			msgs = append(msgs, rd.MessagesAfterPersist...)
		}
		if len(msgs) == 0 {
			return
		}
		for _, m := range msgs {
			if tr.down[m.To] || tr.down[m.From] {
				continue
			}
			if err := tr.rn[m.To].Step(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Fatal("messages still flowing after 1000 rounds")
}

// holds reports whether member id's log has data at index i.
func (tr *trio) holds(t *testing.T, id, i uint64, data []byte) bool {
	t.Helper()
	if li, _ := tr.ms[id].LastIndex(); li < i {
		return false
	}
	es, err := tr.ms[id].Entries(i, i+1, noLimit)
	if err != nil {
		t.Fatal(err)
	}
	return len(es) == 1 && bytes.Equal(es[0].Data, data)
}

// wipedScenario: 1 leads and commits entry e with 2 (3 is down, so 3's log
// lacks e). 2 loses its disk and restarts empty under the same id, with
// fence f; then 1 goes down and 3 comes back and campaigns. It returns the
// trio and e's index.
func wipedScenario(t *testing.T, f VoteFence) (*trio, uint64) {
	tr := newTrio(t)
	tr.rn[1].Campaign()
	tr.pump(t)
	if tr.rn[1].Status().RaftState != StateLeader {
		t.Fatal("1 did not become leader")
	}
	tr.down[3] = true
	e := []byte("committed")
	idx, _, err := tr.rn[1].Propose(EntryNormal, e)
	if err != nil {
		t.Fatal(err)
	}
	tr.pump(t)
	if tr.rn[1].Status().Commit < idx || !tr.holds(t, 2, idx, e) || tr.holds(t, 3, idx, e) {
		t.Fatalf("setup: entry %d not committed by {1,2} alone (commit %d)", idx, tr.rn[1].Status().Commit)
	}
	// 2's disk is replaced: empty log, no term, no vote.
	tr.rn[2], tr.ms[2] = newTestRawNode(t, 2, 1, 2, 3)
	tr.rn[2].SetVoteFence(f)
	tr.down[1], tr.down[3] = true, false
	for tick := 0; tick < 100 && tr.rn[3].Status().RaftState != StateLeader; tick++ {
		tr.rn[3].Tick()
		tr.rn[2].Tick()
		tr.pump(t)
	}
	return tr, idx
}

// TestWipedMemberWithoutFenceLosesCommittedEntry shows the hole the
// lost-log fence closes: a member restarted on an empty disk votes like a
// new one, and a candidate lacking a committed entry wins and overwrites it.
func TestWipedMemberWithoutFenceLosesCommittedEntry(t *testing.T) {
	tr, idx := wipedScenario(t, VoteFence{})
	if tr.rn[3].Status().RaftState != StateLeader {
		t.Fatal("without the fence 3 should win with the wiped member's vote")
	}
	if _, _, err := tr.rn[3].Propose(EntryNormal, []byte("other")); err != nil {
		t.Fatal(err)
	}
	tr.pump(t)
	if tr.rn[3].Status().Commit < idx || tr.holds(t, 3, idx, []byte("committed")) {
		t.Fatalf("expected 3 to commit something else at %d (commit %d)", idx, tr.rn[3].Status().Commit)
	}
}

// TestWipedMemberFencedRefusesCandidateLackingCommitted: with the lost-log
// fence the wiped member refuses its vote; 3 cannot win, and the
// committed entry survives on 1.
func TestWipedMemberFencedRefusesCandidateLackingCommitted(t *testing.T) {
	tr, idx := wipedScenario(t, LostLog())
	if st := tr.rn[3].Status().RaftState; st == StateLeader {
		t.Fatalf("3 won an election lacking committed entry %d", idx)
	}
	if tr.rn[2].Status().RaftState == StateLeader || tr.rn[2].VoteFence() != LostLog() {
		t.Fatalf("2 campaigned or lost its fence: %v %v", tr.rn[2].Status().RaftState, tr.rn[2].VoteFence())
	}
	// 1 comes back: it is elected (3 and 2 may vote for it: its log is
	// the most up to date), catches 2 up, and 2's fence lifts.
	tr.down[1] = false
	for tick := 0; tick < 200 && (tr.rn[1].Status().RaftState != StateLeader || !tr.rn[2].VoteFence().IsZero()); tick++ {
		for id := uint64(1); id <= 3; id++ {
			tr.rn[id].Tick()
		}
		tr.pump(t)
	}
	lead := uint64(0)
	for id := uint64(1); id <= 3; id++ {
		if tr.rn[id].Status().RaftState == StateLeader {
			lead = id
		}
	}
	if lead == 0 || !tr.rn[2].VoteFence().IsZero() || !tr.holds(t, 2, idx, []byte("committed")) {
		t.Fatalf("leader %d; 2's fence %v, holds the entry %v", lead, tr.rn[2].VoteFence(), tr.holds(t, 2, idx, []byte("committed")))
	}
	if lf := tr.rn[2].LeaderLogFence(); lf.IsZero() || lf.Index < idx {
		t.Fatalf("2's fence did not become the leader's log end: %v", lf)
	}
	// Caught up, 2 votes again: with the leader down, 2 and 3 elect.
	tr.down[lead] = true
	for tick := 0; tick < 200; tick++ {
		for id := uint64(1); id <= 3; id++ {
			if !tr.down[id] {
				tr.rn[id].Tick()
			}
		}
		tr.pump(t)
		for id := uint64(1); id <= 3; id++ {
			if id != lead && tr.rn[id].Status().RaftState == StateLeader {
				if !tr.holds(t, id, idx, []byte("committed")) {
					t.Fatalf("new leader %d lacks the committed entry", id)
				}
				return
			}
		}
	}
	t.Fatal("2 and 3 did not elect a leader once 2 had caught up")
}

// TestLostLogFenceAdmitsNobody: the lost-log fence refuses every candidate
// and never lifts by the log alone.
func TestLostLogFenceAdmitsNobody(t *testing.T) {
	f := LostLog()
	if f.admits(1<<40, 1<<40) || f.LiftedBy(1<<40, 1<<40) || !f.IsLostLog() || f.IsZero() {
		t.Fatal("lost-log fence admits or lifts")
	}
	if !f.Merge(VoteFence{Index: 5, Term: 2}).IsLostLog() {
		t.Fatal("merging weakened the lost-log fence")
	}
}
