package logstore

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestAppendReadReopen(t *testing.T) {
	fsys := newSim(1)
	opts := Options{SegmentBytes: 4 << 10, IndexIntervalBytes: 512}
	l, _ := openLog(t, fsys, opts)
	want := appendBatches(t, l, 200, 3, 1, 1000)
	if l.LastIndex() != 200 || l.NextOffset() != 600 {
		t.Fatalf("last %d next %d", l.LastIndex(), l.NextOffset())
	}
	if l.Stats().Segments < 5 {
		t.Fatalf("expected many segments, have %d", l.Stats().Segments)
	}
	if err := sameEntries(allEntries(t, l), want); err != nil {
		t.Fatal(err)
	}
	must(t, l.Sync())
	if l.DurableIndex() != 200 {
		t.Fatalf("durable %d", l.DurableIndex())
	}
	must(t, l.Close())

	l, rec := openLog(t, fsys, opts)
	if rec.Reason != "" || rec.IndexesRebuilt != 0 {
		t.Fatalf("clean reopen reported %+v", rec)
	}
	if err := sameEntries(allEntries(t, l), want); err != nil {
		t.Fatal(err)
	}
	if l.NextOffset() != 600 || l.DurableIndex() != 200 {
		t.Fatalf("after reopen next %d durable %d", l.NextOffset(), l.DurableIndex())
	}
	// Every offset reads back the batch holding it.
	for off := int64(0); off < 600; off += 7 {
		res, err := l.Read(off, 1, 600)
		if err != nil {
			t.Fatal(err)
		}
		base := int64(binary.BigEndian.Uint64(res.Data))
		if base > off || base+3 <= off || res.NextOffset != base+3 {
			t.Fatalf("read %d: batch at %d, next %d", off, base, res.NextOffset)
		}
		if string(res.Data) != string(want[base/3].Data) {
			t.Fatalf("read %d: wrong batch bytes", off)
		}
	}
	if len(readAllBatches(t, l)) != 200 {
		t.Fatal("sequential read did not return 200 batches")
	}
	for i := uint64(1); i <= 200; i++ {
		if got := l.OffsetAfterIndex(i); got != int64(i)*3 {
			t.Fatalf("OffsetAfterIndex(%d) = %d", i, got)
		}
	}
}

func TestAppendRejectsBadInput(t *testing.T) {
	fsys := newSim(1)
	l, _ := openLog(t, fsys, Options{})
	appendBatches(t, l, 2, 1, 3, 0)
	size := l.Stats().SizeBytes
	good := simpleBatch(t, l.NextOffset(), 1, 0, "x")
	wrongOffset := simpleBatch(t, l.NextOffset()+1, 1, 0, "x")
	cases := map[string][]Entry{
		"gap":          {{Index: 4, Term: 3, Kind: KindBatch, Data: good}},
		"old term":     {{Index: 3, Term: 2, Kind: KindBatch, Data: good}},
		"wrong offset": {{Index: 3, Term: 3, Kind: KindBatch, Data: wrongOffset}},
		"short batch":  {{Index: 3, Term: 3, Kind: KindBatch, Data: good[:40]}},
		"bad second":   {{Index: 3, Term: 3, Kind: 9}, {Index: 5, Term: 3, Kind: 9}},
	}
	for name, es := range cases {
		if err := l.Append(es...); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	if l.LastIndex() != 2 || l.Stats().SizeBytes != size {
		t.Fatalf("a rejected append wrote: last %d size %d (was %d)", l.LastIndex(), l.Stats().SizeBytes, size)
	}
	// A control entry takes no offset.
	must(t, l.Append(Entry{Index: 3, Term: 3, Kind: 9, Data: []byte("noop")}))
	if l.NextOffset() != 2 || l.OffsetAfterIndex(3) != 2 {
		t.Fatalf("control entry moved the offset: %d", l.NextOffset())
	}
	must(t, l.Append(Entry{Index: 4, Term: 4, Kind: KindBatch, Data: good}))
	if tm, _ := l.Term(3); tm != 3 {
		t.Fatalf("term(3)=%d", tm)
	}
	if tm, _ := l.Term(4); tm != 4 {
		t.Fatalf("term(4)=%d", tm)
	}
	if _, err := l.Term(5); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("term(5): %v", err)
	}
}

func TestTruncateAfterAndReappend(t *testing.T) {
	fsys := newSim(2)
	opts := Options{SegmentBytes: 2 << 10, IndexIntervalBytes: 256}
	l, _ := openLog(t, fsys, opts)
	old := appendBatches(t, l, 100, 2, 1, 0)
	must(t, l.Sync())
	must(t, l.TruncateAfter(37))
	if l.LastIndex() != 37 || l.NextOffset() != 74 || l.DurableIndex() != 37 {
		t.Fatalf("after truncate: last %d next %d durable %d", l.LastIndex(), l.NextOffset(), l.DurableIndex())
	}
	repl := appendBatches(t, l, 20, 5, 2, 0)
	want := append(append([]Entry(nil), old[:37]...), repl...)
	if err := sameEntries(allEntries(t, l), want); err != nil {
		t.Fatal(err)
	}
	must(t, l.Sync())
	must(t, l.Close())
	l, rec := openLog(t, fsys, opts)
	if rec.Reason != "" {
		t.Fatalf("reopen after truncate cut: %+v", rec)
	}
	if err := sameEntries(allEntries(t, l), want); err != nil {
		t.Fatal(err)
	}
	// Truncating at a segment boundary and to nothing.
	must(t, l.TruncateAfter(0))
	if l.LastIndex() != 0 || l.NextOffset() != 0 {
		t.Fatalf("truncate to empty: last %d next %d", l.LastIndex(), l.NextOffset())
	}
	appendBatches(t, l, 3, 1, 5, 0)
	must(t, l.Sync())
	must(t, l.Close())
	l, _ = openLog(t, fsys, opts)
	if l.LastIndex() != 3 || l.NextOffset() != 3 {
		t.Fatalf("reopen: last %d next %d", l.LastIndex(), l.NextOffset())
	}
}
