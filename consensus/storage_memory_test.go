package consensus

import (
	"errors"
	"testing"
)

func ents(term uint64, from, to uint64) []Entry {
	var out []Entry
	for i := from; i <= to; i++ {
		out = append(out, Entry{Term: term, Index: i, Data: []byte{byte(i)}})
	}
	return out
}

func TestMemoryStorage(t *testing.T) {
	ms := NewMemoryStorage()
	if first, _ := ms.FirstIndex(); first != 1 {
		t.Fatalf("first %d", first)
	}
	if last, _ := ms.LastIndex(); last != 0 {
		t.Fatalf("last %d", last)
	}
	if err := ms.Append(ents(1, 1, 5)); err != nil {
		t.Fatal(err)
	}
	// Overwrite a suffix with a later term; a slice handed out before must
	// not change.
	before, _ := ms.Entries(3, 6, noLimit)
	if err := ms.Append(ents(2, 4, 6)); err != nil {
		t.Fatal(err)
	}
	if before[1].Term != 1 {
		t.Fatal("Append modified a slice returned earlier")
	}
	if tm, _ := ms.Term(4); tm != 2 {
		t.Fatalf("term(4) = %d", tm)
	}
	if err := ms.Append(ents(2, 9, 9)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("gap accepted: %v", err)
	}
	if err := ms.Append([]Entry{{Index: 7}, {Index: 9}}); err == nil {
		t.Fatal("non-dense entries accepted")
	}
	if got, _ := ms.Entries(1, 7, 2); len(got) != 2 {
		t.Fatalf("maxBytes 2 with 1-byte entries: got %d entries", len(got))
	}
	if got, _ := ms.Entries(1, 7, 0); len(got) != 1 {
		t.Fatalf("maxBytes 0 must still return one entry, got %d", len(got))
	}
	cs := ConfState{Voters: []uint64{1, 2, 3}}
	snap, err := ms.CreateSnapshot(4, &cs, []byte("s"))
	if err != nil || snap.Meta.Index != 4 || snap.Meta.Term != 2 {
		t.Fatalf("snapshot %+v %v", snap.Meta, err)
	}
	if err := ms.Compact(4); err != nil {
		t.Fatal(err)
	}
	if _, err := ms.Entries(4, 5, noLimit); !errors.Is(err, ErrCompacted) {
		t.Fatalf("compacted read: %v", err)
	}
	if tm, err := ms.Term(4); err != nil || tm != 2 {
		t.Fatalf("term at the compaction point: %d %v", tm, err)
	}
	if _, err := ms.Term(3); !errors.Is(err, ErrCompacted) {
		t.Fatalf("term below: %v", err)
	}
	if _, err := ms.Term(7); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("term above: %v", err)
	}
	if err := ms.Compact(9); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("compact past the end: %v", err)
	}
	// Appending entries partly compacted skips the compacted part.
	if err := ms.Append(ents(2, 3, 7)); err != nil {
		t.Fatal(err)
	}
	if last, _ := ms.LastIndex(); last != 7 {
		t.Fatalf("last %d", last)
	}
	if err := ms.ApplySnapshot(Snapshot{Meta: SnapshotMeta{Index: 3, Term: 1}}); !errors.Is(err, ErrSnapOutOfDate) {
		t.Fatalf("older snapshot: %v", err)
	}
	if err := ms.ApplySnapshot(Snapshot{Meta: SnapshotMeta{Index: 20, Term: 3, ConfState: cs}}); err != nil {
		t.Fatal(err)
	}
	first, _ := ms.FirstIndex()
	last, _ := ms.LastIndex()
	_, gotCS, _ := ms.InitialState()
	if first != 21 || last != 20 || len(gotCS.Voters) != 3 {
		t.Fatalf("after snapshot: first %d last %d cs %+v", first, last, gotCS)
	}
}
