package consensus

import "testing"

// TestSetMessageLimitsOnRunningLeader: a leader limited to one entry per
// append and four appends in flight catches a member up in steps of that
// size; raising the limits on the running leader lets the rest go in one
// append. (The node raises them when the simulator heals the cluster, for
// members BUGGIFY made with small messages: node/buggify.go
// endLastingBuggify.)
func TestSetMessageLimitsOnRunningLeader(t *testing.T) {
	const entries = 50
	p := newPair(t)
	p.rn[1].SetMessageLimits(1, 4)
	for i := 0; i < entries; i++ {
		if _, _, err := p.rn[1].Propose(EntryNormal, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Four appends are in flight (one per proposal); the rest wait.
	if sizes := p.leaderSends(t); !allOnes(sizes, 4) {
		t.Fatalf("limited to 4 in flight, the leader sent appends of %v entries", sizes)
	}
	p.memberAnswers(t)
	// The acknowledgements free the window: four more of one entry.
	if sizes := p.leaderSends(t); !allOnes(sizes, 4) {
		t.Fatalf("limited to one entry per append and 4 in flight, the leader sent appends of %v entries", sizes)
	}
	p.rn[1].SetMessageLimits(1<<20, 0)
	p.memberAnswers(t)
	if sizes := p.leaderSends(t); len(sizes) != 1 || sizes[0] != entries-8 {
		t.Fatalf("after the limits were raised the leader sent appends of %v entries, want one of %d", sizes, entries-8)
	}
	p.memberAnswers(t)
	p.pump(t)
	if st := p.rn[2].Status(); st.Commit != p.rn[1].Status().Commit {
		t.Fatalf("member 2 commit %d, leader %d", st.Commit, p.rn[1].Status().Commit)
	}
}

// leaderSends takes the leader's (member 1's) Ready, delivers its
// messages to member 2, and returns the entry count of each append with
// entries in it.
func (p *pair) leaderSends(t *testing.T) []int {
	t.Helper()
	rd := persistAndAdvance(t, p.rn[1], p.ms[1])
	var sizes []int
	for _, m := range append(rd.Messages, rd.MessagesAfterPersist...) {
		if m.Type == MsgApp && len(m.Entries) > 0 {
			sizes = append(sizes, len(m.Entries))
		}
		if err := p.rn[m.To].Step(m); err != nil {
			t.Fatal(err)
		}
	}
	return sizes
}

// memberAnswers takes member 2's Ready and delivers its answers to the
// leader.
func (p *pair) memberAnswers(t *testing.T) {
	t.Helper()
	rd := persistAndAdvance(t, p.rn[2], p.ms[2])
	for _, m := range append(rd.Messages, rd.MessagesAfterPersist...) {
		if err := p.rn[m.To].Step(m); err != nil {
			t.Fatal(err)
		}
	}
}

func allOnes(sizes []int, n int) bool {
	if len(sizes) != n {
		return false
	}
	for _, s := range sizes {
		if s != 1 {
			return false
		}
	}
	return true
}
