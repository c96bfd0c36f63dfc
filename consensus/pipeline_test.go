package consensus

import "testing"

// Pipelined Readys (RawNode.SetPipeline): a second Ready is handed out
// before the first is advanced, holding only what the first did not; the
// leader counts its own log towards the commit index only at Advance, in
// order; a follower's acknowledgement leaves with the Ready whose write it
// acknowledges.

func TestPipelinedLeaderCommitsOnlyAdvancedEntries(t *testing.T) {
	rn, ms := newTestRawNode(t, 1, 1)
	rn.SetPipeline(2)
	rn.Campaign()
	for i := 0; i < 5 && rn.HasReady(); i++ {
		persistAndAdvance(t, rn, ms)
	}
	if rn.BasicStatus().RaftState != StateLeader {
		t.Fatal("a single voter did not become leader")
	}
	base := rn.BasicStatus().Commit
	a, _, err := rn.Propose(EntryNormal, []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	rd1 := rn.Ready()
	if len(rd1.Entries) != 1 || rd1.Entries[0].Index != a {
		t.Fatalf("Ready 1 entries %v, want [%d]", rd1.Entries, a)
	}
	must(t, ms.Append(rd1.Entries)) // written, its fsync in flight
	b, _, err := rn.Propose(EntryNormal, []byte("b"))
	if err != nil {
		t.Fatal(err)
	}
	if !rn.HasReady() {
		t.Fatal("no second Ready with a pipeline of 2")
	}
	rd2 := rn.Ready()
	if len(rd2.Entries) != 1 || rd2.Entries[0].Index != b {
		t.Fatalf("Ready 2 entries %v, want only [%d] (Ready 1's are in flight)", rd2.Entries, b)
	}
	must(t, ms.Append(rd2.Entries))
	rn.Propose(EntryNormal, []byte("c"))
	if rn.HasReady() || rn.Outstanding() != 2 {
		t.Fatalf("a third Ready with a pipeline of 2 (outstanding %d)", rn.Outstanding())
	}
	if c := rn.BasicStatus().Commit; c != base {
		t.Fatalf("commit %d before any Advance, want %d: the leader counted an unsynced entry", c, base)
	}
	rn.Advance(rd1)
	if c := rn.BasicStatus().Commit; c != a {
		t.Fatalf("commit %d after Ready 1's Advance, want %d", c, a)
	}
	rn.Advance(rd2)
	if c := rn.BasicStatus().Commit; c != b {
		t.Fatalf("commit %d after Ready 2's Advance, want %d", c, b)
	}
	// The committed entries are handed out once each.
	rd3 := rn.Ready()
	seen := map[uint64]bool{}
	for _, e := range append(append([]Entry{}, rd1.CommittedEntries...), append(rd2.CommittedEntries, rd3.CommittedEntries...)...) {
		if seen[e.Index] {
			t.Fatalf("committed entry %d handed out twice", e.Index)
		}
		seen[e.Index] = true
	}
	if !seen[a] || !seen[b] {
		t.Fatalf("committed entries handed out: %v", seen)
	}
}

// A follower that wrote entries in Ready 1 and then hears a new leader
// replace part of them writes the replacement in Ready 2; each Ready's
// acknowledgement waits for that Ready's persist (MessagesAfterPersist),
// and Advance of Ready 1 does not mark the replaced entries stable.
func TestPipelinedFollowerTruncationUnderReadyInFlight(t *testing.T) {
	rn, ms := newTestRawNode(t, 2, 1, 2, 3)
	rn.SetPipeline(2)
	ents := []Entry{{Index: 1, Term: 1, Data: []byte("x")}, {Index: 2, Term: 1, Data: []byte("y")}, {Index: 3, Term: 1, Data: []byte("z")}}
	must(t, rn.Step(Message{Type: MsgApp, From: 1, To: 2, Term: 1, Index: 0, LogTerm: 0, Entries: ents}))
	rd1 := rn.Ready()
	if len(rd1.Entries) != 3 {
		t.Fatalf("Ready 1 entries %v", rd1.Entries)
	}
	if !ackOf(rd1.MessagesAfterPersist, 3) || ackOf(rd1.Messages, 3) {
		t.Fatalf("Ready 1's acknowledgement of 3 must wait for its persist: now %v, after %v", rd1.Messages, rd1.MessagesAfterPersist)
	}
	must(t, ms.Append(rd1.Entries))
	// Leader 3 of term 2 replaces entries 2 and 3.
	must(t, rn.Step(Message{Type: MsgApp, From: 3, To: 2, Term: 2, Index: 1, LogTerm: 1,
		Entries: []Entry{{Index: 2, Term: 2, Data: []byte("w")}}}))
	rd2 := rn.Ready()
	if len(rd2.Entries) != 1 || rd2.Entries[0].Index != 2 || rd2.Entries[0].Term != 2 {
		t.Fatalf("Ready 2 entries %v, want [2 of term 2]", rd2.Entries)
	}
	if !ackOf(rd2.MessagesAfterPersist, 2) || ackOf(rd2.Messages, 2) {
		t.Fatalf("Ready 2's acknowledgement must wait for its persist: now %v, after %v", rd2.Messages, rd2.MessagesAfterPersist)
	}
	must(t, ms.Append(rd2.Entries))
	rn.Advance(rd1)
	if rn.HasReady() && len(rn.Ready().Entries) > 0 {
		t.Fatal("entries handed out again after Ready 1's Advance")
	}
	rn.Advance(rd2)
	if lt, _ := rn.raft.log.term(2); lt != 2 || rn.raft.log.lastIndex() != 2 || rn.raft.log.persistedIndex() != 2 {
		t.Fatalf("log after both Advances: term(2) %d, last %d, persisted %d", lt, rn.raft.log.lastIndex(), rn.raft.log.persistedIndex())
	}
}

func ackOf(msgs []Message, index uint64) bool {
	for _, m := range msgs {
		if m.Type == MsgAppResp && !m.Reject && m.Index == index {
			return true
		}
	}
	return false
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
