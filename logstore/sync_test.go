package logstore

import (
	"errors"
	"testing"

	"github.com/floe-broker/floe/node/records"
)

// TestSyncPlanRunsBesideAppends runs every SyncPlan on a separate goroutine
// (as the production fsync worker does) while the test goroutine, playing
// the reactor, keeps appending. Run it with -race.
func TestSyncPlanRunsBesideAppends(t *testing.T) {
	for name, fsys := range map[string]FS{"sim": newSim(30), "os": NewOSFS(t.TempDir())} {
		t.Run(name, func(t *testing.T) {
			opts := Options{SegmentBytes: 8 << 10, IndexIntervalBytes: 512}
			l, _, err := Open(fsys, "p0", opts)
			must(t, err)
			type done struct {
				p   *SyncPlan
				err error
			}
			work, results := make(chan *SyncPlan), make(chan done)
			go func() {
				for p := range work {
					results <- done{p, p.Run()}
				}
				close(results)
			}()
			var inflight bool
			var durable uint64
			finish := func(d done) {
				l.FinishSync(d.p, d.err)
				must(t, d.err)
				if l.DurableIndex() < durable || l.DurableIndex() > l.LastIndex() {
					t.Fatalf("durable index went from %d to %d (last %d)", durable, l.DurableIndex(), l.LastIndex())
				}
				durable, inflight = l.DurableIndex(), false
			}
			var want []Entry
			for i := 0; i < 400; i++ {
				want = append(want, appendBatches(t, l, 1, 4, 1, int64(i))...)
				if !inflight {
					if p := l.PrepareSync(); p != nil {
						inflight = true
						work <- p
					}
				}
				select {
				case d := <-results:
					finish(d)
				default:
				}
			}
			if inflight {
				finish(<-results)
			}
			close(work)
			must(t, l.Sync())
			if l.DurableIndex() != l.LastIndex() {
				t.Fatalf("durable %d, last %d after a final sync", l.DurableIndex(), l.LastIndex())
			}
			must(t, l.Close())
			l, rec, err := Open(fsys, "p0", opts)
			must(t, err)
			if rec.Reason != "" {
				t.Fatalf("reopen cut: %+v", rec)
			}
			if err := sameEntries(allEntries(t, l), want); err != nil {
				t.Fatal(err)
			}
			must(t, l.Close())
		})
	}
}

func TestGroupCommitDurability(t *testing.T) {
	fsys := newSim(31)
	l, _ := openLog(t, fsys, Options{})
	first := appendBatches(t, l, 5, 1, 1, 0)
	p := l.PrepareSync()
	if p == nil {
		t.Fatal("nothing to sync after appends")
	}
	if l.PrepareSync() != nil {
		t.Fatal("a second plan while one is in flight")
	}
	if err := l.Sync(); !errors.Is(err, ErrSyncInFlight) {
		t.Fatalf("Sync with a plan in flight: %v", err)
	}
	appendBatches(t, l, 5, 1, 1, 0) // after the plan was prepared
	if l.DurableIndex() != 0 {
		t.Fatal("durable before the sync ran")
	}
	must(t, p.Run())
	l.FinishSync(p, nil)
	if l.DurableIndex() != 5 {
		t.Fatalf("durable %d: a plan covers only what was appended before it was prepared", l.DurableIndex())
	}
	// A truncation while a plan is in flight caps what the plan may claim.
	p = l.PrepareSync()
	must(t, l.TruncateAfter(7))
	must(t, p.Run())
	l.FinishSync(p, nil)
	if l.DurableIndex() != 7 {
		t.Fatalf("durable %d after truncating to 7 under a plan for 10", l.DurableIndex())
	}
	appendBatches(t, l, 2, 1, 2, 0)
	fsys.CrashWith(CrashLoseAll)
	l, _ = openLog(t, fsys, Options{})
	got := allEntries(t, l)
	if len(got) != 7 || sameEntries(got[:5], first) != nil {
		t.Fatalf("after crash: %d entries", len(got))
	}
}

func TestInstallSnapshot(t *testing.T) {
	fsys := newSim(32)
	opts := Options{SegmentBytes: 1 << 10}
	l, _ := openLog(t, fsys, opts)
	old := appendBatches(t, l, 30, 1, 1, 0)
	must(t, l.Sync())
	m := SnapshotMeta{Index: 50, Term: 3, NextOffset: 70, Data: []byte("state")}
	must(t, l.InstallSnapshot(m))
	if l.FirstIndex() != 51 || l.LastIndex() != 50 || l.NextOffset() != 70 || l.StartOffset() != 70 {
		t.Fatalf("after install: first %d last %d next %d start %d", l.FirstIndex(), l.LastIndex(), l.NextOffset(), l.StartOffset())
	}
	if tm, err := l.Term(50); err != nil || tm != 3 {
		t.Fatalf("Term(50) = %d, %v", tm, err)
	}
	if _, err := l.Term(40); !errors.Is(err, ErrCompacted) {
		t.Fatalf("Term(40): %v", err)
	}
	if l.DurableIndex() != 0 {
		t.Fatalf("durable %d before the install is synced", l.DurableIndex())
	}
	// A crash before the sync brings the old log back whole.
	fsys.CrashWith(CrashKeepAll)
	l, _ = openLog(t, fsys, opts)
	if err := sameEntries(allEntries(t, l), old); err != nil {
		t.Fatal(err)
	}
	must(t, l.InstallSnapshot(m))
	e := Entry{Index: 51, Term: 3, Kind: KindBatch, Data: simpleBatch(t, 70, 2, 0, "new")}
	must(t, l.Append(e))
	must(t, l.Sync())
	if l.DurableIndex() != 51 || len(segmentNames(t, fsys)) != 1 {
		t.Fatalf("durable %d, segment files %v", l.DurableIndex(), segmentNames(t, fsys))
	}
	fsys.CrashWith(CrashLoseAll)
	l, _ = openLog(t, fsys, opts)
	snap := l.Snapshot()
	if snap.Index != 50 || snap.Term != 3 || snap.NextOffset != 70 || string(snap.Data) != "state" {
		t.Fatalf("snapshot after reopen %+v", snap)
	}
	if err := sameEntries(allEntries(t, l), []Entry{e}); err != nil {
		t.Fatal(err)
	}
	if err := l.InstallSnapshot(SnapshotMeta{Index: 50}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("installing an older snapshot: %v", err)
	}
}

func TestSetSnapshotRules(t *testing.T) {
	fsys := newSim(33)
	l, _ := openLog(t, fsys, Options{})
	appendBatches(t, l, 10, 2, 1, 0)
	if err := l.SetSnapshot(SnapshotMeta{Index: 5, Term: 1, NextOffset: 10}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("snapshot past the durable index: %v", err)
	}
	must(t, l.Sync())
	if err := l.SetSnapshot(SnapshotMeta{Index: 5, Term: 2, NextOffset: 10}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("snapshot with the wrong term: %v", err)
	}
	if err := l.SetSnapshot(SnapshotMeta{Index: 5, Term: 1, NextOffset: 11}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("snapshot with the wrong offset: %v", err)
	}
	must(t, l.SetSnapshot(SnapshotMeta{Index: 5, Term: 1, NextOffset: 10}))
	if _, err := l.Entries(5, 6, -1); !errors.Is(err, ErrCompacted) {
		t.Fatalf("entries at the snapshot: %v", err)
	}
	if err := l.TruncateAfter(4); !errors.Is(err, ErrCompacted) {
		t.Fatalf("truncating below the snapshot: %v", err)
	}
	// Entries under the snapshot stay readable for Kafka until removed.
	if res, err := l.Read(0, 1, 20); err != nil || len(res.Data) == 0 {
		t.Fatalf("kafka read under the snapshot: %v", err)
	}
}

func TestOffsetForTime(t *testing.T) {
	fsys := newSim(34)
	l, _ := openLog(t, fsys, Options{IndexIntervalBytes: 64})
	// Batch k (k = 0..19) holds 3 records stamped 1000k, 1000k+5, 1000k+10.
	for k := 0; k < 20; k++ {
		recs := []testRec{{key: []byte("a"), value: []byte("x")}, {key: []byte("b"), value: []byte("y"), tsDelta: 5},
			{key: []byte("c"), value: []byte("z"), tsDelta: 10}}
		codec := records.Codec(k % 5)
		e := Entry{Index: l.LastIndex() + 1, Term: 1, Kind: KindBatch, Data: makeBatch(t, l.NextOffset(), int64(k)*1000, codec, recs)}
		must(t, l.Append(e))
	}
	cases := []struct {
		ts   int64
		want int64
		ok   bool
	}{{-5, 0, true}, {0, 0, true}, {1, 1, true}, {5, 1, true}, {6, 2, true}, {11, 3, true},
		{7004, 22, true}, {19010, 59, true}, {19011, 0, false}}
	for _, c := range cases {
		got, ok, err := l.OffsetForTime(c.ts)
		must(t, err)
		if got != c.want || ok != c.ok {
			t.Errorf("OffsetForTime(%d) = %d, %v; want %d, %v", c.ts, got, ok, c.want, c.ok)
		}
	}
	must(t, l.SetStartOffset(31))
	if got, ok, _ := l.OffsetForTime(0); !ok || got != 31 {
		t.Fatalf("OffsetForTime below the start offset = %d, %v", got, ok)
	}
}

func TestStatsCountAppendsAndSyncLatency(t *testing.T) {
	clk := &fakeClock{}
	l, _ := openLog(t, newSim(35), Options{Clock: clk})
	base := l.Stats()
	es := appendBatches(t, l, 4, 2, 1, 0)
	p := l.PrepareSync()
	clk.mono += 3_000_000 // 3 ms from prepare to finish
	must(t, p.Run())
	l.FinishSync(p, nil)
	st := l.Stats()
	var bytes int64
	for _, e := range es {
		bytes += int64(entryHeaderBytes + len(e.Data))
	}
	if st.EntriesAppended-base.EntriesAppended != 4 || st.BytesAppended-base.BytesAppended != bytes {
		t.Fatalf("appended %d entries, %d bytes; want 4, %d", st.EntriesAppended-base.EntriesAppended, st.BytesAppended-base.BytesAppended, bytes)
	}
	if st.Syncs-base.Syncs != 1 || st.SyncLatencySum-base.SyncLatencySum != 3_000_000 {
		t.Fatalf("syncs %d, latency %v", st.Syncs-base.Syncs, st.SyncLatencySum-base.SyncLatencySum)
	}
	if st.Segments != 1 || st.SizeBytes != bytes {
		t.Fatalf("segments %d size %d", st.Segments, st.SizeBytes)
	}
}
