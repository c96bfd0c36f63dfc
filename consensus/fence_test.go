package consensus

import (
	"math/rand"
	"testing"
)

// A member that discarded entries (vote fence) must neither grant a vote to
// a candidate whose log is no longer behind its shortened one, nor start an
// election, until its log is back past the fence.
func TestVoteFence(t *testing.T) {
	rn, ms := newTestRawNode(t, 2, 1, 2, 3)
	// Our log: entries 1..3 at term 1.
	if err := ms.Append([]Entry{{Term: 1, Index: 1}, {Term: 1, Index: 2}, {Term: 1, Index: 3}}); err != nil {
		t.Fatal(err)
	}
	rn, _ = newRawNodeOn(t, 2, ms)
	rn.SetVoteFence(VoteFence{Index: 10, Term: 1}) // we held up to 1/10 before discarding 4..10
	vote := Message{Type: MsgVote, From: 3, To: 2, Term: 2, Index: 3, LogTerm: 1}
	if err := rn.Step(vote); err != nil {
		t.Fatal(err)
	}
	rd := persistAndAdvance(t, rn, ms)
	if got := voteAnswers(rd); got != "reject" {
		t.Fatalf("fenced member answered a vote request: %s", got)
	}
	for i := 0; i < 40; i++ {
		rn.Tick()
	}
	if st := rn.Status(); st.RaftState != StateFollower {
		t.Fatalf("fenced member campaigned: %v", st.RaftState)
	}
	// The leader sends the lost entries back: the fence lifts.
	var ents []Entry
	for i := uint64(4); i <= 10; i++ {
		ents = append(ents, Entry{Term: 1, Index: i})
	}
	if err := rn.Step(Message{Type: MsgApp, From: 1, To: 2, Term: 2, Index: 3, LogTerm: 1, Entries: ents, Commit: 10}); err != nil {
		t.Fatal(err)
	}
	persistAndAdvance(t, rn, ms)
	if f := rn.VoteFence(); !f.IsZero() {
		t.Fatalf("fence %d still up with the log at %d", f, rn.Status().LastIndex)
	}
	vote = Message{Type: MsgVote, From: 3, To: 2, Term: 3, Index: 10, LogTerm: 1}
	if err := rn.Step(vote); err != nil {
		t.Fatal(err)
	}
	if got := voteAnswers(persistAndAdvance(t, rn, ms)); got != "grant" {
		t.Fatalf("unfenced member answered %s to an up-to-date candidate", got)
	}
}

func newRawNodeOn(t *testing.T, id uint64, ms *MemoryStorage) (*RawNode, *MemoryStorage) {
	t.Helper()
	rn, err := NewRawNode(Config{ID: id, ElectionTicks: 10, HeartbeatTicks: 1, Storage: ms,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 16, Rand: newTestRand(id)})
	if err != nil {
		t.Fatal(err)
	}
	return rn, ms
}

// voteAnswers summarizes the vote responses a Ready sends.
func voteAnswers(rd Ready) string {
	for _, m := range append(rd.Messages, rd.MessagesAfterPersist...) {
		if m.Type == MsgVoteResp {
			if m.Reject {
				return "reject"
			}
			return "grant"
		}
	}
	return "none"
}

func newTestRand(id uint64) *rand.Rand { return rand.New(rand.NewSource(int64(id))) }
