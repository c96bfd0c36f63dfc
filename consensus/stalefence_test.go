package consensus

import (
	"bytes"
	"testing"
)

// links is three RawNodes wired together with per-link cuts, and a record
// of every entry any member ever reported committed, so that a committed
// entry later replaced or lost fails the test.
type links struct {
	rn        [4]*RawNode
	ms        [4]*MemoryStorage
	cut       map[[2]uint64]bool
	committed map[uint64]Entry // index -> the entry first seen committed there
	// applyConf: the Ready loop applies committed configuration changes
	// (members that start from bootstrap entries, as a node's do).
	applyConf bool
}

func newLinks(t *testing.T) *links {
	l := &links{cut: map[[2]uint64]bool{}, committed: map[uint64]Entry{}}
	for id := uint64(1); id <= 3; id++ {
		l.rn[id], l.ms[id] = newTestRawNode(t, id, 1, 2, 3)
	}
	return l
}

// setLink cuts or heals the link between a and b, both ways.
func (l *links) setLink(a, b uint64, up bool) {
	l.cut[[2]uint64{a, b}], l.cut[[2]uint64{b, a}] = !up, !up
}

// pump delivers messages over the links that are up until none is left,
// checking after each round that no committed entry changed.
func (l *links) pump(t *testing.T) {
	t.Helper()
	for round := 0; round < 1000; round++ {
		var msgs []Message
		for id := uint64(1); id <= 3; id++ {
			if !l.rn[id].HasReady() {
				continue
			}
			var rd Ready
			if l.applyConf {
				rd = persistApplyConfAndAdvance(t, l.rn[id], l.ms[id])
			} else {
				rd = persistAndAdvance(t, l.rn[id], l.ms[id])
			}
			msgs = append(msgs, rd.Messages...)
			msgs = append(msgs, rd.MessagesAfterPersist...)
		}
		l.checkCommitted(t)
		if len(msgs) == 0 {
			return
		}
		for _, m := range msgs {
			if l.cut[[2]uint64{m.From, m.To}] {
				continue
			}
			if err := l.rn[m.To].Step(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Fatal("messages still flowing after 1000 rounds")
}

// ticks ticks the members ids n times, pumping after each.
func (l *links) ticks(t *testing.T, n int, ids ...uint64) {
	t.Helper()
	for i := 0; i < n; i++ {
		for _, id := range ids {
			l.rn[id].Tick()
		}
		l.pump(t)
	}
}

// checkCommitted records what each member holds committed (and durable)
// and fails if an index committed before now holds another entry.
func (l *links) checkCommitted(t *testing.T) {
	t.Helper()
	for id := uint64(1); id <= 3; id++ {
		commit := min(l.rn[id].Status().Commit, mustLastIndex(t, l.ms[id]))
		first, _ := l.ms[id].FirstIndex()
		for i := first; i <= commit; i++ {
			es, err := l.ms[id].Entries(i, i+1, noLimit)
			if err != nil || len(es) != 1 {
				continue
			}
			e := es[0]
			prev, seen := l.committed[i]
			if !seen {
				l.committed[i] = e
				continue
			}
			if prev.Term != e.Term || !bytes.Equal(prev.Data, e.Data) {
				t.Fatalf("index %d was committed with %q (term %d); member %d now commits %q (term %d) there: a committed entry is lost",
					i, prev.Data, prev.Term, id, e.Data, e.Term)
			}
		}
	}
}

func mustLastIndex(t *testing.T, ms *MemoryStorage) uint64 {
	t.Helper()
	li, err := ms.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	return li
}

// TestLostLogFenceRefusesStaleLeader is the window docs/architecture.md
// ("A replaced disk") described as not covered before the term probe:
// leader 1 of term 1 is cut off from 2 and 3 without knowing it (no
// check-quorum here; in a broker, the window before check-quorum deposes
// it); 2 and 3 elect 2 in term 2 and commit e. 3 loses its disk and comes
// back empty under the lost-log fence, and the stale leader 1 reaches it
// first while 2 cannot. Without the probe, 3 (its term forgotten) takes
// 1's term-1 appends, 1's log end becomes its fence target, and 1 commits
// its own entries with 3's acknowledgements at the indexes 2 committed in
// term 2: once the partition heals, one of the two committed histories is
// lost. With the probe, 3 first asks the other members for their term and
// needs answers from enough of them that one holds every committed entry;
// only 1 can answer, so 3 takes nothing from 1, and once 2 answers (term 2)
// 3 follows term 2 and 1's stale appends are refused.
func TestLostLogFenceRefusesStaleLeader(t *testing.T) {
	l := newLinks(t)
	l.rn[1].Campaign()
	l.pump(t)
	if l.rn[1].Status().RaftState != StateLeader {
		t.Fatal("setup: 1 did not become leader")
	}
	if _, _, err := l.rn[1].Propose(EntryNormal, []byte("before")); err != nil {
		t.Fatal(err)
	}
	l.pump(t)

	// 1 is cut off; 2 and 3 elect 2 in term 2 and commit e.
	l.setLink(1, 2, false)
	l.setLink(1, 3, false)
	l.rn[2].Campaign()
	l.pump(t)
	e := []byte("committed in term 2")
	idx, _, err := l.rn[2].Propose(EntryNormal, e)
	if err != nil {
		t.Fatal(err)
	}
	l.pump(t)
	if st := l.rn[2].Status(); st.RaftState != StateLeader || st.Commit < idx {
		t.Fatalf("setup: 2 (%v) did not commit e at %d (commit %d)", st.RaftState, idx, st.Commit)
	}

	// 3's disk is replaced; the stale leader 1 reaches it, 2 does not.
	l.rn[3], l.ms[3] = newTestRawNode(t, 3, 1, 2, 3)
	l.rn[3].SetVoteFence(LostLog())
	l.setLink(2, 3, false)
	l.setLink(1, 3, true)
	for _, x := range []string{"stale x1", "stale x2", "stale x3"} {
		if _, _, err := l.rn[1].Propose(EntryNormal, []byte(x)); err != nil {
			t.Fatal(err)
		}
	}
	l.ticks(t, 30, 1, 3)

	// 2 reaches 3 again; then every link heals.
	l.setLink(2, 3, true)
	l.ticks(t, 30, 2, 3)
	l.setLink(1, 2, true)
	l.setLink(1, 3, true)
	l.ticks(t, 60, 1, 2, 3)
	lead := uint64(0)
	for id := uint64(1); id <= 3; id++ {
		if l.rn[id].Status().RaftState == StateLeader {
			lead = id
		}
	}
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

// holdsAt reports whether ms has data at index i.
func holdsAt(t *testing.T, ms *MemoryStorage, i uint64, data []byte) bool {
	t.Helper()
	if mustLastIndex(t, ms) < i {
		return false
	}
	es, err := ms.Entries(i, i+1, noLimit)
	if err != nil {
		t.Fatal(err)
	}
	return len(es) == 1 && bytes.Equal(es[0].Data, data)
}
