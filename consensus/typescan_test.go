package consensus

import (
	"math/rand"
	"testing"
)

// readCounter is a MemoryStorage that counts how often Entries returned
// each index, and lists types for TypeScanner without going through
// Entries.
type readCounter struct {
	*MemoryStorage
	reads     map[uint64]int
	typeScans int
}

func (s *readCounter) Entries(lo, hi, maxBytes uint64) ([]Entry, error) {
	ents, err := s.MemoryStorage.Entries(lo, hi, maxBytes)
	for _, e := range ents {
		s.reads[e.Index]++
	}
	return ents, err
}

func (s *readCounter) EntryTypes(lo, hi uint64) ([]EntryType, error) {
	s.typeScans++
	ents, err := s.MemoryStorage.Entries(lo, hi, noLimit)
	types := make([]EntryType, len(ents))
	for i, e := range ents {
		types[i] = e.Type
	}
	return types, err
}

// TestRestartReadsTheLogOnce: a single voter restarted on a log of
// committed entries it has not applied (the applied index is not
// persisted) campaigns, which first looks for a configuration change among
// those entries, and then applies them. With a TypeScanner storage the
// look reads only the types: every entry's data is read once, by the
// replay. (What holds is Raft's side: the node's replay still reads each
// entry whole, and logstore's Kinds reads headers in 4 KiB reads, so with
// entries smaller than that the file's bytes are read twice, once without
// copying or checking payloads.)
func TestRestartReadsTheLogOnce(t *testing.T) {
	const n = 200
	ms := NewMemoryStorage()
	ms.SetConfState(ConfState{Voters: []uint64{1}})
	var ents []Entry
	for i := uint64(1); i <= n; i++ {
		ents = append(ents, Entry{Index: i, Term: 1, Type: EntryType(2), Data: []byte("data")})
	}
	if err := ms.Append(ents); err != nil {
		t.Fatal(err)
	}
	ms.SetHardState(HardState{Term: 1, Commit: n})
	st := &readCounter{MemoryStorage: ms, reads: map[uint64]int{}}
	rn, err := NewRawNode(Config{ID: 1, ElectionTicks: 10, HeartbeatTicks: 1, Storage: st,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 16, Rand: rand.New(rand.NewSource(1))})
	if err != nil {
		t.Fatal(err)
	}
	// The election timeout passes before the first Ready is handled, so
	// the campaign comes while nothing is applied, as at a broker's
	// restart under load.
	for i := 0; i < 20; i++ {
		rn.Tick()
	}
	applied := uint64(0)
	for round := 0; round < 1000 && (applied < n || rn.BasicStatus().RaftState != StateLeader); round++ {
		rn.Tick()
		for rn.HasReady() {
			rd := rn.Ready()
			if rd.HardState != (HardState{}) {
				ms.SetHardState(rd.HardState)
			}
			if err := ms.Append(rd.Entries); err != nil {
				t.Fatal(err)
			}
			for _, e := range rd.CommittedEntries {
				applied = max(applied, e.Index)
			}
			rn.Advance(rd)
		}
	}
	if applied < n {
		t.Fatalf("applied %d of %d committed entries", applied, n)
	}
	if rn.BasicStatus().RaftState != StateLeader {
		t.Fatalf("state %v after the restart, want leader", rn.BasicStatus().RaftState)
	}
	if st.typeScans == 0 {
		t.Fatal("the campaign never asked the storage for types")
	}
	for i := uint64(1); i <= n; i++ {
		if st.reads[i] != 1 {
			t.Fatalf("entry %d read %d times through Entries, want once (the replay)", i, st.reads[i])
		}
	}
}
