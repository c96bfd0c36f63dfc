package consensus

import (
	"errors"
	"math/rand"
	"testing"

	"github.com/floe-broker/floe/internal/assert"
)

func newTestRawNode(t testing.TB, id uint64, voters ...uint64) (*RawNode, *MemoryStorage) {
	t.Helper()
	ms := NewMemoryStorage()
	ms.SetConfState(ConfState{Voters: voters})
	rn, err := NewRawNode(Config{
		ID: id, ElectionTicks: 10, HeartbeatTicks: 1, Storage: ms,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 16, Rand: rand.New(rand.NewSource(int64(id))),
	})
	if err != nil {
		t.Fatal(err)
	}
	return rn, ms
}

// persistAndAdvance is the minimal Ready loop of a node with durable-at-once
// storage; it returns the Ready handled.
func persistAndAdvance(t testing.TB, rn *RawNode, ms *MemoryStorage) Ready {
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
	rn.Advance(rd)
	return rd
}

func TestConfigValidation(t *testing.T) {
	ms := NewMemoryStorage()
	rng := rand.New(rand.NewSource(1))
	bad := []Config{
		{ID: 0, ElectionTicks: 10, HeartbeatTicks: 1, Storage: ms, Rand: rng},
		{ID: 1, ElectionTicks: 1, HeartbeatTicks: 1, Storage: ms, Rand: rng},
		{ID: 1, ElectionTicks: 10, HeartbeatTicks: 0, Storage: ms, Rand: rng},
		{ID: 1, ElectionTicks: 10, HeartbeatTicks: 1, Rand: rng},
		{ID: 1, ElectionTicks: 10, HeartbeatTicks: 1, Storage: ms},
		{ID: 1, ElectionTicks: 10, HeartbeatTicks: 1, Storage: ms, Rand: rng, Applied: 5},
		{ID: 1, ElectionTicks: 10, HeartbeatTicks: 1, Storage: ms, Rand: rng, ElectionDelayTicks: -1},
	}
	for i, c := range bad {
		if _, err := NewRawNode(c); err == nil {
			t.Errorf("config %d accepted", i)
		}
	}
}

// TestElectionDelayTicks: a member with a delay campaigns no earlier than
// the delay plus the longest plain timeout would allow, and at the latest
// one plain timeout after the delay; after its timer is reset (here by a
// vote it grants) the delay is gone.
func TestElectionDelayTicks(t *testing.T) {
	const election, delay = 10, 25
	for seed := int64(1); seed <= 20; seed++ {
		ms := NewMemoryStorage()
		ms.SetConfState(ConfState{Voters: []uint64{1, 2, 3}})
		rn, err := NewRawNode(Config{ID: 2, ElectionTicks: election, HeartbeatTicks: 1, Storage: ms,
			Rand: rand.New(rand.NewSource(seed)), ElectionDelayTicks: delay, PreVote: true})
		if err != nil {
			t.Fatal(err)
		}
		ticks := 0
		for rn.BasicStatus().RaftState == StateFollower {
			rn.Tick()
			ticks++
			if ticks > delay+2*election {
				t.Fatalf("seed %d: no campaign after %d ticks", seed, ticks)
			}
		}
		if ticks < delay+election {
			t.Fatalf("seed %d: campaigned after %d ticks, before the delay %d plus a timeout %d", seed, ticks, delay, election)
		}
		// A plain member campaigns within 2*election ticks.
		plain, _ := newTestRawNode(t, 3, 1, 2, 3)
		n := 0
		for plain.BasicStatus().RaftState == StateFollower {
			plain.Tick()
			if n++; n > 2*election {
				t.Fatalf("seed %d: a member without delay did not campaign in %d ticks", seed, n)
			}
		}
	}
	// Granting a vote resets the timer: the rest of the delay is dropped.
	ms := NewMemoryStorage()
	ms.SetConfState(ConfState{Voters: []uint64{1, 2, 3}})
	rn, err := NewRawNode(Config{ID: 2, ElectionTicks: election, HeartbeatTicks: 1, Storage: ms,
		Rand: rand.New(rand.NewSource(1)), ElectionDelayTicks: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if err := rn.Step(Message{Type: MsgVote, From: 1, To: 2, Term: 1}); err != nil {
		t.Fatal(err)
	}
	persistAndAdvance(t, rn, ms)
	for i := 0; rn.BasicStatus().RaftState == StateFollower; i++ {
		rn.Tick()
		if i > 2*election {
			t.Fatalf("the delay outlived a granted vote")
		}
	}
}

// TestSingleVoterCommitsOnlyAfterPersist: the leader's own log counts
// towards the quorum only once Advance reports it durable, so with one
// voter nothing commits within the Ready that carries the entry.
func TestSingleVoterCommitsOnlyAfterPersist(t *testing.T) {
	rn, ms := newTestRawNode(t, 1, 1)
	rn.Campaign()
	if st := rn.Status(); st.RaftState != StateLeader {
		t.Fatalf("a single voter must win at once, state %s", st.RaftState)
	}
	rd := rn.Ready()
	if len(rd.Entries) != 1 || len(rd.CommittedEntries) != 0 {
		t.Fatalf("first Ready: %d entries, %d committed; want 1, 0", len(rd.Entries), len(rd.CommittedEntries))
	}
	if rn.HasReady() {
		t.Fatal("HasReady before Advance")
	}
	if again := rn.Ready(); len(again.Entries) != 0 || again.HardState != (HardState{}) {
		t.Fatal("a second Ready before Advance must be empty")
	}
	ms.SetHardState(rd.HardState)
	if err := ms.Append(rd.Entries); err != nil {
		t.Fatal(err)
	}
	rn.Advance(rd)
	rd = persistAndAdvance(t, rn, ms)
	if len(rd.CommittedEntries) != 1 || rd.HardState.Commit != 1 {
		t.Fatalf("after persist: committed %v, hard state %+v", rd.CommittedEntries, rd.HardState)
	}
	index, term, err := rn.Propose(EntryNormal, []byte("x"))
	if err != nil || index != 2 || term != 1 {
		t.Fatalf("propose: %d %d %v", index, term, err)
	}
}

func TestProposeOnFollower(t *testing.T) {
	rn, _ := newTestRawNode(t, 1, 1, 2, 3)
	if _, _, err := rn.Propose(EntryNormal, []byte("x")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("err = %v, want ErrNotLeader", err)
	}
	if _, _, err := rn.Propose(EntryConfChange, []byte("garbage")); !errors.Is(err, ErrInvalidConfChange) {
		t.Fatalf("err = %v, want ErrInvalidConfChange", err)
	}
}

func TestMaxUncommittedBytes(t *testing.T) {
	ms := NewMemoryStorage()
	ms.SetConfState(ConfState{Voters: []uint64{1, 2, 3}})
	rn, err := NewRawNode(Config{ID: 1, ElectionTicks: 10, HeartbeatTicks: 1, Storage: ms,
		MaxUncommittedEntriesBytes: 100, Rand: rand.New(rand.NewSource(1))})
	if err != nil {
		t.Fatal(err)
	}
	becomeLeaderOf3(t, rn, ms)
	accepted := 0
	for i := 0; i < 10; i++ {
		if _, _, err := rn.Propose(EntryNormal, make([]byte, 30)); err == nil {
			accepted++
		} else if !errors.Is(err, ErrProposalDropped) {
			t.Fatal(err)
		}
	}
	if accepted != 3 { // 3*30 fits under 100; a fourth would go over
		t.Fatalf("accepted %d proposals of 30 bytes under a 100-byte cap", accepted)
	}
}

// becomeLeaderOf3 makes rn leader of {1,2,3} by feeding it two votes.
func becomeLeaderOf3(t testing.TB, rn *RawNode, ms *MemoryStorage) {
	t.Helper()
	rn.Campaign()
	persistAndAdvance(t, rn, ms)
	for _, from := range []uint64{2, 3} {
		if err := rn.Step(Message{Type: MsgVoteResp, From: from, To: 1, Term: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if rn.Status().RaftState != StateLeader {
		t.Fatal("not leader")
	}
	persistAndAdvance(t, rn, ms)
}

func TestStepRejectsMalformed(t *testing.T) {
	rn, _ := newTestRawNode(t, 1, 1, 2, 3)
	bad := []Message{
		{Type: MsgProp, From: 2, Term: 1},
		{Type: MsgSnapStatus, From: 2, Term: 1},
		{Type: 0, From: 2, Term: 1},
		{Type: 99, From: 2, Term: 1},
		{Type: MsgApp, From: 0, Term: 1},
		{Type: MsgApp, From: 2, Term: 0},
		{Type: MsgApp, From: 2, Term: 2, Index: 5, Entries: []Entry{{Term: 2, Index: 7}}},
		{Type: MsgApp, From: 2, Term: 2, Index: 5, Entries: []Entry{{Term: 3, Index: 6}}},
		{Type: MsgApp, From: 2, Term: 2, Index: 5, LogTerm: 2, Entries: []Entry{{Term: 1, Index: 6}}},
		{Type: MsgSnap, From: 2, Term: 2},
		{Type: MsgHeartbeat, From: 2, Term: 2, Entries: []Entry{{Term: 1, Index: 1}}},
		{Type: MsgAppResp, From: 9, Term: 2},
	}
	before := rn.Status()
	for i, m := range bad {
		if err := rn.Step(m); err == nil {
			t.Errorf("message %d (%s) accepted", i, describeMessage(m))
		}
	}
	if after := rn.Status(); after.Term != before.Term || after.LastIndex != before.LastIndex {
		t.Fatal("a refused message changed the state")
	}
}

// TestStepRandomMessagesNeverPanics feeds a leader and a follower random,
// often nonsensical, but well-formed messages and checks the log
// invariants hold throughout.
func TestStepRandomMessagesNeverPanics(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for round := 0; round < 50; round++ {
		rn, ms := newTestRawNode(t, 1, 1, 2, 3)
		if round%2 == 0 {
			becomeLeaderOf3(t, rn, ms)
		}
		for i := 0; i < 300; i++ {
			m := randomMessage(rng)
			_ = rn.Step(m)
			if rng.Intn(4) == 0 {
				rn.Tick()
			}
			if rng.Intn(3) == 0 && rn.HasReady() {
				persistAndAdvance(t, rn, ms)
			}
			l := rn.raft.log
			if l.applied > l.committed || l.committed > l.lastIndex() {
				t.Fatalf("round %d: applied %d committed %d last %d", round, l.applied, l.committed, l.lastIndex())
			}
		}
	}
}

func randomMessage(rng *rand.Rand) Message {
	m := Message{
		Type:    MessageType(1 + rng.Intn(int(MsgReadIndexResp))),
		From:    uint64(2 + rng.Intn(3)),
		To:      1,
		Term:    uint64(1 + rng.Intn(4)),
		LogTerm: uint64(rng.Intn(4)),
		Index:   uint64(rng.Intn(12)),
		Commit:  uint64(rng.Intn(15)),
		Reject:  rng.Intn(3) == 0,
	}
	m.RejectHint = uint64(rng.Intn(12))
	if m.Type == MsgApp {
		term := max(m.LogTerm, 1)
		m.Term = max(m.Term, term)
		for i := 0; i < rng.Intn(4); i++ {
			m.Entries = append(m.Entries, Entry{Term: term, Index: m.Index + 1 + uint64(i)})
		}
	}
	if m.Type == MsgSnap {
		m.Snapshot = &Snapshot{Meta: SnapshotMeta{Index: uint64(1 + rng.Intn(15)), Term: uint64(1 + rng.Intn(3)),
			ConfState: ConfState{Voters: []uint64{1, 2, 3}}}}
	}
	if rng.Intn(5) == 0 {
		m.Context = []byte{byte(rng.Intn(3))}
	}
	return m
}

// TestReadIndexWaitsForTermCommit: a new leader answers reads only after
// an entry of its term commits and a heartbeat round confirms it leads.
func TestReadIndexWaitsForTermCommit(t *testing.T) {
	rn, ms := newTestRawNode(t, 1, 1, 2, 3)
	becomeLeaderOf3(t, rn, ms)
	rn.ReadIndex([]byte("r1"))
	if rd := persistAndAdvance(t, rn, ms); len(rd.ReadStates) != 0 {
		t.Fatal("read answered before the leader committed in its term")
	}
	if err := rn.Step(Message{Type: MsgAppResp, From: 2, To: 1, Term: 1, Index: 1}); err != nil {
		t.Fatal(err)
	}
	rd := persistAndAdvance(t, rn, ms)
	var hb *Message
	for i, m := range rd.Messages {
		if m.Type == MsgHeartbeat && string(m.Context) == "r1" {
			hb = &rd.Messages[i]
		}
	}
	if hb == nil || len(rd.ReadStates) != 0 {
		t.Fatalf("want a heartbeat round tagged r1 and no answer yet; got %v", rd.Messages)
	}
	if err := rn.Step(Message{Type: MsgHeartbeatResp, From: 3, To: 1, Term: 1, Context: []byte("r1")}); err != nil {
		t.Fatal(err)
	}
	rd = persistAndAdvance(t, rn, ms)
	if len(rd.ReadStates) != 1 || rd.ReadStates[0].Index != 1 || string(rd.ReadStates[0].RequestCtx) != "r1" {
		t.Fatalf("read states %+v", rd.ReadStates)
	}
}

// TestReadIndexRetryRunsNewRound: a read asked again while pending (its
// heartbeat round lost) gets a new round tagged with it, and the answer
// to that round confirms it. Before, the retry was dropped as a
// duplicate and the read stayed pending for the rest of the term
// (simulator seed 36: a metadata barrier resent under one id never
// passed).
func TestReadIndexRetryRunsNewRound(t *testing.T) {
	rn, ms := newTestRawNode(t, 1, 1, 2, 3)
	becomeLeaderOf3(t, rn, ms)
	if err := rn.Step(Message{Type: MsgAppResp, From: 2, To: 1, Term: 1, Index: 1}); err != nil {
		t.Fatal(err)
	}
	persistAndAdvance(t, rn, ms)
	rn.ReadIndex([]byte("r1"))
	persistAndAdvance(t, rn, ms) // the round's heartbeats: lost
	rn.ReadIndex([]byte("r1"))   // the caller's retry
	rd := persistAndAdvance(t, rn, ms)
	tagged := 0
	for _, m := range rd.Messages {
		if m.Type == MsgHeartbeat && string(m.Context) == "r1" {
			tagged++
		}
	}
	if tagged != 2 {
		t.Fatalf("the retry sent %d heartbeats tagged r1, want 2 (one per follower); messages %v", tagged, rd.Messages)
	}
	if err := rn.Step(Message{Type: MsgHeartbeatResp, From: 3, To: 1, Term: 1, Context: []byte("r1")}); err != nil {
		t.Fatal(err)
	}
	rd = persistAndAdvance(t, rn, ms)
	if len(rd.ReadStates) != 1 || rd.ReadStates[0].Index != 1 || string(rd.ReadStates[0].RequestCtx) != "r1" {
		t.Fatalf("read states %+v, want r1 answered at 1 once", rd.ReadStates)
	}
}

func TestRestartClampsCommit(t *testing.T) {
	ms := NewMemoryStorage()
	ms.SetConfState(ConfState{Voters: []uint64{1, 2, 3}})
	if err := ms.Append(ents(1, 1, 3)); err != nil {
		t.Fatal(err)
	}
	// The hard state got to disk but the last entries did not.
	ms.SetHardState(HardState{Term: 1, Commit: 7})
	rn, err := NewRawNode(Config{ID: 1, ElectionTicks: 10, HeartbeatTicks: 1, Storage: ms, Applied: 2,
		Rand: rand.New(rand.NewSource(1))})
	if err != nil {
		t.Fatal(err)
	}
	st := rn.Status()
	if st.Commit != 3 || st.Applied != 2 {
		t.Fatalf("commit %d applied %d, want 3 and 2", st.Commit, st.Applied)
	}
	rd := rn.Ready()
	if len(rd.CommittedEntries) != 1 || rd.CommittedEntries[0].Index != 3 {
		t.Fatalf("committed entries %v: only index 3 is left to apply", rd.CommittedEntries)
	}
}

// TestCommittedEntriesBounded: a member far behind its commit index gets
// its committed entries in Readies of bounded size, in order, all of them.
func TestCommittedEntriesBounded(t *testing.T) {
	ms := NewMemoryStorage()
	ms.SetConfState(ConfState{Voters: []uint64{1, 2, 3}})
	if err := ms.Append(ents(1, 1, 100)); err != nil { // 1-byte entries
		t.Fatal(err)
	}
	ms.SetHardState(HardState{Term: 1, Commit: 100})
	rn, err := NewRawNode(Config{ID: 1, ElectionTicks: 10, HeartbeatTicks: 1, Storage: ms,
		MaxCommittedBytesPerReady: 30, Rand: rand.New(rand.NewSource(1))})
	if err != nil {
		t.Fatal(err)
	}
	next, readies := uint64(1), 0
	for rn.HasReady() {
		rd := persistAndAdvance(t, rn, ms)
		if payloadBytes(rd.CommittedEntries) > 30 {
			t.Fatalf("Ready with %d bytes of committed entries", payloadBytes(rd.CommittedEntries))
		}
		for _, e := range rd.CommittedEntries {
			if e.Index != next {
				t.Fatalf("entry %d handed out, want %d", e.Index, next)
			}
			next++
		}
		readies++
	}
	if next != 101 || readies < 4 {
		t.Fatalf("applied up to %d in %d Readies", next-1, readies)
	}
}

// TestAdvanceWithForeignReady: Advance with a Ready that RawNode did not
// hand out is the caller's bug. With assertions on (tests, simulator) it
// fails loudly; in production it breaks no invariant.
func TestAdvanceWithForeignReady(t *testing.T) {
	foreign := Ready{
		Entries:          []Entry{{Term: 9, Index: 99}},
		CommittedEntries: []Entry{{Term: 9, Index: 50}},
		Snapshot:         Snapshot{Meta: SnapshotMeta{Index: 70, Term: 9}},
	}
	rn, ms := newTestRawNode(t, 1, 1, 2, 3)
	becomeLeaderOf3(t, rn, ms)
	rn.Ready()
	if v := assert.Catch(func() { rn.Advance(foreign) }); v == nil {
		t.Fatalf("applying past the commit index raised no assertion")
	}

	defer assert.Set(assert.Set(false))
	rn, ms = newTestRawNode(t, 1, 1, 2, 3)
	becomeLeaderOf3(t, rn, ms)
	rn.Ready()
	rn.Advance(foreign)
	l := rn.raft.log
	if l.applied > l.committed || l.committed > l.lastIndex() || l.lastIndex() != 1 {
		t.Fatalf("applied %d committed %d last %d", l.applied, l.committed, l.lastIndex())
	}
}

// TestStepDown: a leader that steps down is a follower of its own term,
// knows no leader, keeps its vote and log, and refuses proposals; on a
// follower StepDown does nothing.
func TestStepDown(t *testing.T) {
	rn, ms := newTestRawNode(t, 1, 1)
	rn.Campaign()
	persistAndAdvance(t, rn, ms)
	persistAndAdvance(t, rn, ms)
	before := rn.Status()
	if before.RaftState != StateLeader {
		t.Fatalf("state %s, want leader", before.RaftState)
	}
	rn.StepDown()
	st := rn.Status()
	if st.RaftState != StateFollower || st.Lead != 0 || st.Term != before.Term || st.Vote != before.Vote || st.LastIndex != before.LastIndex {
		t.Fatalf("after StepDown: %s lead %d term %d vote %d last %d; want a follower of term %d, no leader, vote %d, last %d",
			st.RaftState, st.Lead, st.Term, st.Vote, st.LastIndex, before.Term, before.Vote, before.LastIndex)
	}
	if _, _, err := rn.Propose(EntryNormal, []byte("x")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("propose after StepDown: %v, want ErrNotLeader", err)
	}
	f, _ := newTestRawNode(t, 2, 1, 2, 3)
	f.StepDown()
	if st := f.Status(); st.RaftState != StateFollower || st.Term != 0 {
		t.Fatalf("StepDown on a follower changed it: %s term %d", st.RaftState, st.Term)
	}
}
