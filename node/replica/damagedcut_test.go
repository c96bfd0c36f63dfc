package replica

import (
	"encoding/binary"
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/floe-broker/floe/consensus"
)

// TestDamagedCutStallsTheReplica: a deposed leader's tail is replaced by
// a new leader's append, and the header of the last entry both agree on
// is damaged: the cut after it cannot find where that entry ends. Take
// returns ErrDamagedWrite (the node repairs the replica; before, the
// broker stopped: sim seed 1903863 with --all-faults), writes nothing,
// and the replica is Damaged and Stalled: Raft accepted a Ready the log
// never took, so no further Ready may be taken — with a pipeline of two a
// second one could be, and its entries (after the first's, which the log
// lacks) and acknowledgements would follow a log that does not exist —
// and nothing more of it is sent.
func TestDamagedCutStallsTheReplica(t *testing.T) {
	g := newGroup(t)
	m1 := g.add(1, 1, 2, 3)
	g.add(2, 1, 2, 3)
	g.add(3, 1, 2, 3)
	g.pump()
	m1.rep.raft.Campaign()
	g.pump()
	g.propose(m1, 2)
	st := m1.rep.BasicStatus()
	agreed, term := st.Commit, st.Term
	// Two entries the deposed leader alone makes durable.
	for i := 0; i < 2; i++ {
		if _, _, err := m1.rep.Propose(EntryBatch+1, []byte("old")); err != nil {
			t.Fatal(err)
		}
	}
	g.settle(m1)
	if d := m1.rep.DurableIndex(); d != agreed+2 {
		t.Fatalf("durable %d, want %d", d, agreed+2)
	}
	m1.rep.pipeline = 2
	m1.rep.raft.SetPipeline(2)
	// A bit flipped in the length field of entry agreed's header.
	names, err := m1.fs.List("g")
	if err != nil {
		t.Fatal(err)
	}
	flipped := false
	for _, n := range names {
		if !strings.HasSuffix(n, ".log") {
			continue
		}
		b, err := m1.fs.ReadFile(path.Join("g", n))
		if err != nil {
			t.Fatal(err)
		}
		for pos := 0; pos+56 <= len(b); pos += 56 + int(binary.LittleEndian.Uint32(b[pos+8:])) {
			if binary.LittleEndian.Uint64(b[pos+16:]) == agreed {
				must(t, m1.fs.FlipBit(path.Join("g", n), int64(pos+10), 6))
				flipped = true
				break
			}
		}
	}
	if !flipped {
		t.Fatalf("entry %d in no segment of %v", agreed, names)
	}
	app := func(index uint64, commit uint64) consensus.Message {
		return consensus.Message{Type: consensus.MsgApp, From: 2, To: 1, Term: term + 1, LogTerm: term + 1, Index: index,
			Entries: []consensus.Entry{{Term: term + 1, Index: index + 1, Type: EntryBatch + 1, Data: []byte("new")}}, Commit: commit}
	}
	first := app(agreed, agreed)
	first.LogTerm = term
	must(t, m1.rep.raft.Step(first))
	if !m1.rep.HasWork() {
		t.Fatal("no Ready for the append")
	}
	now, _, err := m1.rep.Take()
	if !errors.Is(err, ErrDamagedWrite) {
		t.Fatalf("take: %v, want ErrDamagedWrite", err)
	}
	if len(now) != 0 || !m1.rep.Damaged() || !m1.rep.Stalled() {
		t.Fatalf("after the failed take: %d messages, damaged %v, stalled %v; want none, true, true",
			len(now), m1.rep.Damaged(), m1.rep.Stalled())
	}
	if m1.rep.LastIndex() != agreed+2 || m1.rep.InFlight() != 0 {
		t.Fatalf("after the failed take: last %d, %d in flight; want %d (nothing cut) and 0", m1.rep.LastIndex(), m1.rep.InFlight(), agreed+2)
	}
	// The leader goes on: Raft, which believes it holds agreed+1, takes
	// agreed+2 and would acknowledge it.
	must(t, m1.rep.raft.Step(app(agreed+1, agreed+1)))
	if m1.rep.HasWork() {
		t.Fatal("a stalled replica has a Ready to take")
	}
	if m1.rep.LastIndex() != agreed+2 {
		t.Fatalf("last %d, want %d: the stalled replica's log changed", m1.rep.LastIndex(), agreed+2)
	}
}
