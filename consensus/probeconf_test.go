package consensus

import (
	"math/rand"
	"slices"
	"testing"
)

// The lost-log fence's term probe counts the voters of the newest
// membership in the member's log, not its applied voters (fence.go,
// newestconf.go). The probe must hear from enough voters that every
// majority able to commit includes one of them, the member itself aside
// (it forgot the acknowledgements it gave): those majorities are of the
// membership deciding elections and commits, the newest in the log. A
// member's applied membership can lag that by any number of changes: a
// replaced replica starts from bootstrap entries it has not applied yet
// (no voters at all), or restarts under the lost-log fence with its
// applied index before changes its log holds.

// persistApplyConfAndAdvance is persistAndAdvance that also applies the
// committed configuration changes, as a node's Ready loop does.
func persistApplyConfAndAdvance(t testing.TB, rn *RawNode, ms *MemoryStorage) Ready {
	t.Helper()
	rd := rn.Ready()
	if !rd.Snapshot.IsEmpty() {
		if err := ms.ApplySnapshot(rd.Snapshot); err != nil {
			t.Fatal(err)
		}
	}
	if rd.HardState != (HardState{}) {
		ms.SetHardState(rd.HardState)
	}
	if err := ms.Append(rd.Entries); err != nil {
		t.Fatal(err)
	}
	for _, e := range rd.CommittedEntries {
		if e.Type != EntryConfChange {
			continue
		}
		cc, err := UnmarshalConfChange(e.Data)
		if err != nil {
			t.Fatal(err)
		}
		ms.SetConfState(rn.ApplyConfChange(cc))
	}
	rn.Advance(rd)
	return rd
}

// newBootstrappedMember is a partition replica as node/replicas.go opens
// it on a new log: the bootstrap entries (add-voter 1, 2, 3 at indexes 1
// to 3, term 1, committed) and no applied membership yet; with the
// lost-log fence when its broker's disk was replaced (node/disk.go).
func newBootstrappedMember(t *testing.T, id uint64, fence VoteFence) (*RawNode, *MemoryStorage) {
	t.Helper()
	ms := NewMemoryStorage()
	var boot []Entry
	for i, v := range []uint64{1, 2, 3} {
		cc := ConfChange{Type: ConfAddVoter, NodeID: v}
		boot = append(boot, Entry{Term: 1, Index: uint64(i + 1), Type: EntryConfChange, Data: cc.Marshal()})
	}
	if err := ms.Append(boot); err != nil {
		t.Fatal(err)
	}
	ms.SetHardState(HardState{Term: 1, Commit: uint64(len(boot))})
	rn, err := NewRawNode(Config{
		ID: id, ElectionTicks: 10, HeartbeatTicks: 1, Storage: ms,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 16, Rand: rand.New(rand.NewSource(int64(id))),
		VoteFence: fence,
	})
	if err != nil {
		t.Fatal(err)
	}
	return rn, ms
}

// TestLostLogProbeCountsVotersInLog is TestLostLogFenceRefusesStaleLeader
// with members that start as a node's do, from bootstrap entries they
// apply in their first Ready. Leader 1 of term 2 is cut off; 2 and 3
// commit e in term 3. 3's disk is replaced: it comes back with the
// bootstrap entries and the lost-log fence, and ticks before its first
// Ready, so its applied membership is still empty though its log says
// [1 2 3]. Counting the applied voters, its probe had nobody to ask and
// concluded at once; 3 then took the stale leader 1's term-2 appends and
// 1 committed its own entries with 3's acknowledgements over e. Counting
// the voters in its log, 3 waits for 2's answer (term 3) and refuses 1.
func TestLostLogProbeCountsVotersInLog(t *testing.T) {
	l := &links{cut: map[[2]uint64]bool{}, committed: map[uint64]Entry{}, applyConf: true}
	for id := uint64(1); id <= 3; id++ {
		l.rn[id], l.ms[id] = newBootstrappedMember(t, id, VoteFence{})
	}
	l.pump(t)
	l.rn[1].Campaign()
	l.pump(t)
	if st := l.rn[1].Status(); st.RaftState != StateLeader || !slices.Equal(st.Config.Voters, []uint64{1, 2, 3}) {
		t.Fatalf("setup: 1 is %v with voters %v", st.RaftState, st.Config.Voters)
	}
	if _, _, err := l.rn[1].Propose(EntryNormal, []byte("before")); err != nil {
		t.Fatal(err)
	}
	l.pump(t)

	// 1 is cut off; 2 and 3 elect 2 in term 3 and commit e.
	l.setLink(1, 2, false)
	l.setLink(1, 3, false)
	l.rn[2].Campaign()
	l.pump(t)
	e := []byte("committed in term 3")
	idx, _, err := l.rn[2].Propose(EntryNormal, e)
	if err != nil {
		t.Fatal(err)
	}
	l.pump(t)
	if st := l.rn[2].Status(); st.RaftState != StateLeader || st.Commit < idx {
		t.Fatalf("setup: 2 (%v) did not commit e at %d (commit %d)", st.RaftState, idx, st.Commit)
	}

	// 3's disk is replaced; the stale leader 1 reaches it, 2 does not. 3
	// ticks first (links.ticks ticks, then handles the Readys).
	l.rn[3], l.ms[3] = newBootstrappedMember(t, 3, LostLog())
	staleLeaderMeetsReplacedMember(t, l, idx, e)
}

// TestLostLogProbeTwoChangesBehind: a member under the lost-log fence
// restarted with voters [1 2 3] applied and, beyond its applied index, the
// committed promotion of 4 and the promotion of 5. The group decides in
// [1 2 3 4 5], where {1, 4, 5} is a majority: with this member's own
// acknowledgements forgotten, 4 and 5 alone may hold the latest committed
// entry, in a term 2 and 3 never saw. Answers from 2 and 3 (both other
// applied voters) must not end the probe; answers from three of the four
// others do.
func TestLostLogProbeTwoChangesBehind(t *testing.T) {
	ms := NewMemoryStorage()
	ms.SetConfState(ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4, 5}})
	ents := []Entry{{Term: 2, Index: 1}}
	for i, v := range []uint64{4, 5} {
		cc := ConfChange{Type: ConfAddVoter, NodeID: v}
		ents = append(ents, Entry{Term: 2, Index: uint64(i + 2), Type: EntryConfChange, Data: cc.Marshal()})
	}
	if err := ms.Append(ents); err != nil {
		t.Fatal(err)
	}
	ms.SetHardState(HardState{Term: 2, Commit: 2})
	rn, err := NewRawNode(Config{
		ID: 1, ElectionTicks: 10, HeartbeatTicks: 1, Storage: ms,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 16, Rand: rand.New(rand.NewSource(1)),
		VoteFence: LostLog(),
	})
	if err != nil {
		t.Fatal(err)
	}
	rn.Tick()
	var asked []uint64
	for _, m := range rn.Ready().Messages {
		if m.Type == MsgTermQuery {
			asked = append(asked, m.To)
		}
	}
	slices.Sort(asked)
	if !slices.Equal(asked, []uint64{2, 3, 4, 5}) {
		t.Errorf("the probe asked %v, want the voters of [1 2 3 4 5] but itself", asked)
	}
	for _, from := range []uint64{2, 3} {
		if err := rn.Step(Message{From: from, To: 1, Term: 2, Type: MsgTermQueryResp, Index: 3, LogTerm: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if !rn.raft.awaitingTerm() {
		t.Fatalf("the probe ended on the answers of 2 and 3 (term 2), a majority of none but the applied [1 2 3]; {1, 4, 5} decides in [1 2 3 4 5]")
	}
	if err := rn.Step(Message{From: 4, To: 1, Term: 5, Type: MsgTermQueryResp, Index: 9, LogTerm: 5}); err != nil {
		t.Fatal(err)
	}
	if rn.raft.awaitingTerm() || rn.Status().Term != 5 {
		t.Fatalf("after 2, 3 and 4 answered, awaiting %v, term %d (want done, term 5)", rn.raft.awaitingTerm(), rn.Status().Term)
	}
}

// staleLeaderMeetsReplacedMember is the end of the replaced-disk scenarios:
// 3, just replaced, is reached by the stale leader 1 and not by 2, which
// committed e at idx in term 3; 3 must not follow 1, and once every link
// heals every member holds e at idx and 3's fence is lifted.
func staleLeaderMeetsReplacedMember(t *testing.T, l *links, idx uint64, e []byte) {
	t.Helper()
	l.setLink(2, 3, false)
	l.setLink(1, 3, true)
	for _, x := range []string{"stale x1", "stale x2", "stale x3"} {
		if _, _, err := l.rn[1].Propose(EntryNormal, []byte(x)); err != nil {
			t.Fatal(err)
		}
	}
	l.ticks(t, 30, 1, 3)
	if st := l.rn[3].Status(); st.Term < 3 && st.Lead == 1 {
		t.Errorf("3 follows the stale leader 1 in term %d", st.Term)
	}

	// 2 reaches 3 again; then every link heals.
	l.setLink(2, 3, true)
	l.ticks(t, 30, 2, 3)
	l.setLink(1, 2, true)
	l.setLink(1, 3, true)
	l.ticks(t, 60, 1, 2, 3)
	lead := l.leaderOf(1, 2, 3)
	if lead == 0 {
		t.Fatal("no leader once every link healed")
	}
	if _, _, err := l.rn[lead].Propose(EntryNormal, []byte("after")); err != nil {
		t.Fatal(err)
	}
	l.ticks(t, 10, 1, 2, 3)
	for id := uint64(1); id <= 3; id++ {
		if !holdsAt(t, l.ms[id], idx, e) {
			t.Fatalf("member %d lacks e at %d after the heal (leader %d)", id, idx, lead)
		}
	}
	if !l.rn[3].VoteFence().IsZero() {
		t.Fatalf("3 is still fenced after catching up: %v", l.rn[3].VoteFence())
	}
}
