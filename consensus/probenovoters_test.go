package consensus

import (
	"math/rand"
	"testing"
)

// newEmptyMember is a replica as node/replicas.go opens it for a group
// that was moved onto its broker (added by a membership change, not one of
// the group's initial voters): an empty log, no membership, no hard
// state; with the lost-log fence when its broker's disk was replaced, and
// probeVoters, the group's replicas as the controller's metadata lists
// them, as the voters its term probe asks (Config.ProbeVoters).
func newEmptyMember(t *testing.T, id uint64, fence VoteFence, probeVoters []uint64) (*RawNode, *MemoryStorage) {
	t.Helper()
	ms := NewMemoryStorage()
	rn, err := NewRawNode(Config{
		ID: id, ElectionTicks: 10, HeartbeatTicks: 1, Storage: ms,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 16, Rand: rand.New(rand.NewSource(int64(id))),
		VoteFence: fence, ProbeVoters: probeVoters,
	})
	if err != nil {
		t.Fatal(err)
	}
	return rn, ms
}

// TestLostLogProbeWithoutVotersInLog is TestLostLogProbeCountsVotersInLog
// for a replica whose log holds no membership at all: a replaced disk's
// replica of a group that was moved opens empty (it is not an initial
// voter, so it gets no bootstrap entries). Leader 1 of term 2 is cut off;
// 2 and 3 commit e in term 3. 3's disk is replaced and it comes back empty
// under the lost-log fence. Knowing no voters, its probe asked nobody and
// concluded at once (h-novoter: the case fence.go left open); 3 then took
// the stale leader 1's term-2 snapshot and appends, and 1 committed its
// own entries with 3's acknowledgements over e. Given the group's replicas
// from the controller as the voters to probe, 3 waits for 2's answer
// (term 3) and refuses 1.
func TestLostLogProbeWithoutVotersInLog(t *testing.T) {
	l := &links{cut: map[[2]uint64]bool{}, committed: map[uint64]Entry{}, applyConf: true}
	for id := uint64(1); id <= 3; id++ {
		l.rn[id], l.ms[id] = newBootstrappedMember(t, id, VoteFence{})
	}
	l.pump(t)
	l.rn[1].Campaign()
	l.pump(t)
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

	// 3's disk is replaced: it comes back empty; the stale leader 1
	// reaches it, 2 does not.
	l.rn[3], l.ms[3] = newEmptyMember(t, 3, LostLog(), []uint64{1, 2, 3})
	staleLeaderMeetsReplacedMember(t, l, idx, e)
}
