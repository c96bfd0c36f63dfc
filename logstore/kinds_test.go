package logstore

import (
	"errors"
	"path"
	"slices"
	"testing"
)

// TestKindsListsHeadersAndChecksTheChain: Kinds gives every entry's kind
// across segments from the headers alone; a damaged header (one that
// breaks the chain, or names the wrong index) is ErrCorrupt, while a
// damaged payload, which only the entry's checksum covers, is left for
// Entries to find.
func TestKindsListsHeadersAndChecksTheChain(t *testing.T) {
	fsys := newSim(3)
	l, _ := openLog(t, fsys, Options{SegmentBytes: 2 << 10, IndexIntervalBytes: 256})
	var want []uint8
	for i := 0; i < 90; i++ {
		e := Entry{Index: l.LastIndex() + 1, Term: 1, Kind: uint8(2 + i%5), Data: []byte("control entry payload")}
		if i%3 == 0 {
			e.Kind, e.Data = KindBatch, simpleBatch(t, l.NextOffset(), 2, 1000, "k")
		}
		must(t, l.Append(e))
		want = append(want, e.Kind)
	}
	must(t, l.Sync())
	if l.Stats().Segments < 3 {
		t.Fatalf("%d segments: the test wants several", l.Stats().Segments)
	}
	got, err := l.Kinds(1, 91)
	must(t, err)
	if !slices.Equal(got, want) {
		t.Fatalf("kinds %v, want %v", got, want)
	}
	got, err = l.Kinds(40, 60)
	must(t, err)
	if !slices.Equal(got, want[39:59]) {
		t.Fatalf("kinds of [40, 60) %v, want %v", got, want[39:59])
	}
	if _, err := l.Kinds(1, 92); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("kinds past the end: %v", err)
	}

	names, err := fsys.List("p0")
	must(t, err)
	first := ""
	for _, n := range names {
		if path.Ext(n) == ".log" {
			first = path.Join("p0", n)
			break
		}
	}
	// Entry 1 starts the first segment: its payload, then its term.
	must(t, fsys.FlipBit(first, entryHeaderBytes+20, 0))
	if _, err := l.Kinds(1, 91); err != nil {
		t.Fatalf("kinds with a damaged payload: %v (only the checksum covers it)", err)
	}
	if _, err := l.Entries(1, 2, -1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("entries with a damaged payload: %v, want ErrCorrupt", err)
	}
	must(t, fsys.FlipBit(first, entryHeaderBytes+20, 0))
	must(t, fsys.FlipBit(first, 24, 3)) // entry 1's term: entry 2 no longer chains to it
	if _, err := l.Kinds(1, 91); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("kinds with a damaged header: %v, want ErrCorrupt", err)
	}
	must(t, fsys.FlipBit(first, 24, 3))
	must(t, fsys.FlipBit(first, 16, 0)) // entry 1's index
	if _, err := l.Kinds(1, 91); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("kinds with a damaged index: %v, want ErrCorrupt", err)
	}
}
