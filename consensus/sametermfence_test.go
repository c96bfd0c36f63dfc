package consensus

import (
	"math"
	"testing"
)

// A member fenced over a loss of unknown extent in its current term (fence
// {MaxUint64, T}: a segment file gone, nothing says how far its log went)
// caught up in full from the leader of that same term, whose log holds
// entries of term T only at the end: by the old rule the fence lifted only
// once the log held an entry of a later term, which needs a new leader,
// which needs this member's vote, which the fence refused to a log of
// last term T. With two voters the group then elected nobody for ever once
// the leader stepped down. Sim seed 2900308 with --all-faults: n2 lost
// sim-0's segment file to a lying fsync (fence {MaxUint64 3}), was placed
// back as a voter of [2 3] and caught up from n3, leader of term 3; n3's
// balancer handed leadership to n2, the preferred replica, which could not
// campaign, and n3 stepped down when the transfer failed; n2 then refused
// every vote of n3 (last term 3). The leader of the member's own term holds
// every entry the member acknowledged before its loss that can count (its
// own entries of term T, and by Leader Completeness every entry committed
// in an earlier term), so its log end, carried by its heartbeats, stands
// in for the old log as it does for a lost-log fence.
func TestFenceOfUnknownExtentLiftsUnderLeaderOfItsTerm(t *testing.T) {
	p := newPair(t)
	for i := 0; i < 20; i++ {
		if _, _, err := p.rn[1].Propose(EntryNormal, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	p.pump(t)
	term := p.rn[1].Status().Term
	if m := progressOf(p.rn[1], 2).Match; m < 20 {
		t.Fatalf("member 2 matched %d before the loss", m)
	}
	// Member 2 restarts with its log cut back to 5 entries, its hard state
	// kept: a fence of unknown extent in its current term.
	p.restartCutBack(t, 2, 5)
	last, _ := p.ms[1].LastIndex()
	for tick := 0; tick < 20; tick++ {
		p.rn[1].Tick()
		p.pump(t)
	}
	if li, _ := p.ms[2].LastIndex(); li < last {
		t.Fatalf("member 2 holds %d of the leader's %d entries", li, last)
	}
	if f := p.rn[2].VoteFence(); !f.IsZero() {
		t.Fatalf("member 2, caught up with the leader of its term %d, is still fenced %v", term, f)
	}
	// The leader hands leadership to member 2 (the preferred replica): it
	// must be able to campaign, or, once the leader steps down, vote.
	p.transferExpectingLeaderAfter(t, term)
}

// The leader of the fence's term may hand leadership to the fenced member
// before its fence gave way: caught up by appends right after its first
// refusal, before the next heartbeat carries the leader's log end. The
// member cannot campaign on the MsgTimeoutNow, and the leader steps down
// an election timeout later; but its heartbeats meanwhile carry its log
// end, so the fence has given way by then and the leader is elected again
// (or the member, on a later transfer). Before sameTermLeaderLog the group
// elected nobody for ever, as in sim seed 2900308.
func TestTransferToFencedMemberBeforeItsFenceGaveWay(t *testing.T) {
	p := newPair(t)
	for i := 0; i < 20; i++ {
		if _, _, err := p.rn[1].Propose(EntryNormal, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	p.pump(t)
	term := p.rn[1].Status().Term
	fence := p.restartCutBack(t, 2, 5)
	// One heartbeat: member 2 refuses it (it lost entries), and the
	// leader's appends catch it up; no heartbeat has carried the leader's
	// log end yet.
	p.rn[1].Tick()
	p.pump(t)
	last, _ := p.ms[1].LastIndex()
	if li, _ := p.ms[2].LastIndex(); li < last || p.rn[2].VoteFence() != fence {
		t.Fatalf("member 2 holds %d of %d entries, fence %v: not the caught-up member with its first fence the test needs",
			li, last, p.rn[2].VoteFence())
	}
	p.transferExpectingLeaderAfter(t, term)
}

// restartCutBack restarts member id with its log cut back to its first n
// entries and its hard state kept (its commit index n): a loss of unknown
// extent in its current term, so it comes back under the fence
// {MaxUint64, term}, which it returns.
func (p *pair) restartCutBack(t *testing.T, id int, n uint64) VoteFence {
	t.Helper()
	hs, cs, err := p.ms[id].InitialState()
	if err != nil {
		t.Fatal(err)
	}
	ents, err := p.ms[id].Entries(1, n+1, math.MaxUint64)
	if err != nil {
		t.Fatal(err)
	}
	ms := NewMemoryStorage()
	ms.SetConfState(cs)
	hs.Commit = n
	ms.SetHardState(hs)
	if err := ms.Append(ents); err != nil {
		t.Fatal(err)
	}
	p.rn[id], p.ms[id] = newRawNodeOn(t, uint64(id), ms)
	f := VoteFence{Index: math.MaxUint64, Term: hs.Term}
	p.rn[id].SetVoteFence(f)
	return f
}

// transferExpectingLeaderAfter has member 1 hand leadership to member 2
// and fails the test unless a leader of a term later than term is
// elected within 200 ticks.
func (p *pair) transferExpectingLeaderAfter(t *testing.T, term uint64) {
	t.Helper()
	p.rn[1].TransferLeader(2)
	p.pump(t)
	for tick := 0; tick < 200; tick++ {
		for id := 1; id <= 2; id++ {
			p.rn[id].Tick()
		}
		p.pump(t)
		for id := 1; id <= 2; id++ {
			if st := p.rn[id].Status(); st.RaftState == StateLeader && st.Term > term {
				return
			}
		}
	}
	t.Fatalf("no leader of a later term than %d 200 ticks after the transfer: member 1 %v term %d, member 2 %v term %d fence %v", term,
		p.rn[1].Status().RaftState, p.rn[1].Status().Term, p.rn[2].Status().RaftState, p.rn[2].Status().Term, p.rn[2].VoteFence())
}
