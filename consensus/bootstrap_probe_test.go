package consensus

import (
	"math/rand"
	"testing"
)

// probeBootstrapTerm is the term of the bootstrap entries in these tests,
// as node/replicas.go writes them.
const probeBootstrapTerm = 1

// newFreshControllerMember is what node gives a controller replica on a
// freshly formatted data directory: the bootstrap entries of voters 1, 2,
// 3 (committed, term 1), the lost-log fence, and the bootstrap exception.
func newFreshControllerMember(t *testing.T, id uint64) (*RawNode, *MemoryStorage) {
	t.Helper()
	ms := NewMemoryStorage()
	ms.SetConfState(ConfState{Voters: []uint64{1, 2, 3}})
	boot := make([]Entry, 3)
	for i := range boot {
		boot[i] = Entry{Term: probeBootstrapTerm, Index: uint64(i + 1), Type: EntryNormal}
	}
	if err := ms.Append(boot); err != nil {
		t.Fatal(err)
	}
	ms.SetHardState(HardState{Term: probeBootstrapTerm, Commit: uint64(len(boot))})
	rn, err := NewRawNode(Config{
		ID: id, ElectionTicks: 10, HeartbeatTicks: 1, Storage: ms,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 16, Rand: rand.New(rand.NewSource(int64(id))),
		VoteFence: LostLog(), LostLogBootstrapTerm: probeBootstrapTerm,
	})
	if err != nil {
		t.Fatal(err)
	}
	return rn, ms
}

// newFreshControllerLinks is three fresh controller members, linked.
func newFreshControllerLinks(t *testing.T) *links {
	l := &links{cut: map[[2]uint64]bool{}, committed: map[uint64]Entry{}}
	for id := uint64(1); id <= 3; id++ {
		l.rn[id], l.ms[id] = newFreshControllerMember(t, id)
	}
	return l
}

// leaderOf returns the member of ids that leads, or 0.
func (l *links) leaderOf(ids ...uint64) uint64 {
	for _, id := range ids {
		if l.rn[id].Status().RaftState == StateLeader {
			return id
		}
	}
	return 0
}

// electAndCommit ticks ids until one of them leads (bounded), then has
// it commit data, and returns the leader and the entry's index.
func (l *links) electAndCommit(t *testing.T, data string, ids ...uint64) (uint64, uint64) {
	t.Helper()
	for i := 0; i < 200 && l.leaderOf(ids...) == 0; i++ {
		l.ticks(t, 1, ids...)
	}
	lead := l.leaderOf(ids...)
	if lead == 0 {
		t.Fatalf("no leader among %v after 200 ticks", ids)
	}
	idx, _, err := l.rn[lead].Propose(EntryNormal, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	l.ticks(t, 3, ids...)
	if c := l.rn[lead].Status().Commit; c < idx {
		t.Fatalf("leader %d did not commit %q at %d (commit %d)", lead, data, idx, c)
	}
	return lead, idx
}

// TestFreshGroupWithOneVoterDownCommits: a new 3-voter controller group
// (every replica on a fresh directory, so under the lost-log fence with
// the bootstrap exception) with voter 3 still down elects and commits:
// 1 and 2 each hear from the other that its log holds only bootstrap
// entries, which with itself is a majority, and decide the group is new
// (with the full probe's rule each waited for 3 forever: CI's
// TestRollingRestartCheckControllerQuorum). When 3 starts, the others'
// logs are past the bootstrap term, so it is not in a new group: it
// learns the term, catches up from the leader and drops its fence.
func TestFreshGroupWithOneVoterDownCommits(t *testing.T) {
	l := newFreshControllerLinks(t)
	l.setLink(1, 3, false)
	l.setLink(2, 3, false)
	_, idx := l.electAndCommit(t, "first", 1, 2)

	l.setLink(1, 3, true)
	l.setLink(2, 3, true)
	l.ticks(t, 40, 1, 2, 3)
	if !holdsAt(t, l.ms[3], idx, []byte("first")) {
		t.Fatalf("3 did not catch up to index %d", idx)
	}
	if f := l.rn[3].VoteFence(); !f.IsZero() {
		t.Fatalf("3 is still fenced after catching up: %v", f)
	}
	if l.rn[3].Status().RaftState == StateLeader {
		t.Fatal("3, started with a log of bootstrap entries only, leads a group that committed past them")
	}
}

// TestReplacedBootstrapVoterProbes: the bootstrap exception must not let
// a replaced controller voter take the group for a new one. 1 and 2
// formed the group while 3 was down, and committed x. The follower of the
// two loses its disk (a fresh directory: lost-log fence and bootstrap
// exception) and 3 starts for the first time; both probe, and the leader
// answers before it is cut off, then both would have a majority of logs
// of bootstrap entries only. Without the probe's last-term answers (the
// exception as it was, or an answer taken for a new group), the two vote
// for each other's bootstrap-only log, one wins, and once the old leader
// is back its committed x is overwritten. With them, the leader's answer
// (its log is past the bootstrap term) turns the exception off for both:
// nobody leads while the leader is away, and once it is back both catch
// up from it.
func TestReplacedBootstrapVoterProbes(t *testing.T) {
	l := newFreshControllerLinks(t)
	l.setLink(1, 3, false)
	l.setLink(2, 3, false)
	lead, idx := l.electAndCommit(t, "x", 1, 2)
	other := 3 - lead // the follower of 1 and 2

	// The follower's disk is replaced; 3 comes up. One round of probes
	// reaches the leader, which answers (it is not ticked, so it sends
	// no heartbeat the fresh members could catch up from), then it is
	// cut off.
	l.rn[other], l.ms[other] = newFreshControllerMember(t, other)
	l.setLink(1, 3, true)
	l.setLink(2, 3, true)
	l.ticks(t, 1, other, 3)
	l.setLink(lead, other, false)
	l.setLink(lead, 3, false)
	for i := 0; i < 100; i++ {
		l.ticks(t, 1, other, 3)
		if got := l.leaderOf(other, 3); got != 0 {
			t.Fatalf("member %d, with a log of bootstrap entries only, leads a group that committed x at %d", got, idx)
		}
	}

	// The leader is back: both learn its log end and catch up.
	l.setLink(lead, other, true)
	l.setLink(lead, 3, true)
	l.ticks(t, 40, 1, 2, 3)
	for id := uint64(1); id <= 3; id++ {
		if !holdsAt(t, l.ms[id], idx, []byte("x")) {
			t.Fatalf("member %d lacks x at %d (leader %d)", id, idx, lead)
		}
		if f := l.rn[id].VoteFence(); !f.IsZero() {
			t.Fatalf("member %d is still fenced after catching up: %v", id, f)
		}
	}
}
