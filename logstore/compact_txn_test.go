package logstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/floe-broker/floe/node/records"
)

// txnLog appends batches to a log; each is given its base offset.
type txnLog struct {
	t *testing.T
	l *Log
}

func (x txnLog) add(opts records.BuildOptions, recs ...records.Record) int64 {
	x.t.Helper()
	base := x.l.NextOffset()
	opts.BaseOffset = base
	must(x.t, x.l.Append(Entry{Index: x.l.LastIndex() + 1, Term: 1, Kind: KindBatch, Data: records.Build(opts, recs)}))
	return base
}

func (x txnLog) txn(pid int64, kvs ...string) int64 {
	var recs []records.Record
	for i := 0; i+1 < len(kvs); i += 2 {
		recs = append(recs, records.Record{Key: []byte(kvs[i]), Value: []byte(kvs[i+1])})
	}
	return x.add(records.BuildOptions{BaseTimestamp: oldTs, Transactional: true, Producer: &records.Producer{ID: pid, BaseSequence: 0}}, recs...)
}

func (x txnLog) plain(kvs ...string) int64 {
	var recs []records.Record
	for i := 0; i+1 < len(kvs); i += 2 {
		recs = append(recs, records.Record{Key: []byte(kvs[i]), Value: []byte(kvs[i+1])})
	}
	return x.add(records.BuildOptions{BaseTimestamp: oldTs}, recs...)
}

func (x txnLog) marker(pid int64, commit bool, ts int64) int64 {
	x.t.Helper()
	typ := records.ControlAbort
	if commit {
		typ = records.ControlCommit
	}
	base := x.l.NextOffset()
	b := records.BuildMarker(records.Producer{ID: pid}, records.Marker{Type: typ}, base, 0, ts)
	must(x.t, x.l.Append(Entry{Index: x.l.LastIndex() + 1, Term: 1, Kind: KindBatch, Data: b}))
	return base
}

// fill appends plain batches of key "f" until a new segment starts.
func (x txnLog) fill() {
	for segs := len(x.l.segs); len(x.l.segs) == segs; {
		x.plain("f", "filler-value-filler-value-filler-value")
	}
}

// batchAt returns the record count and the "key=value" records of the
// batch at base.
func batchAt(t *testing.T, l *Log, base int64) (int32, []string) {
	t.Helper()
	res, err := l.Read(base, 1, l.NextOffset())
	must(t, err)
	bs, err := records.Split(res.Data)
	must(t, err)
	h, err := records.ParseHeader(bs[0])
	must(t, err)
	if h.BaseOffset != base {
		t.Fatalf("batch at %d starts at %d", base, h.BaseOffset)
	}
	var kvs []string
	must(t, records.Records(bs[0], func(r records.Record) error {
		kvs = append(kvs, fmt.Sprintf("%s=%s", r.Key, r.Value))
		return nil
	}))
	return h.RecordCount, kvs
}

// Kafka's rules, pass by pass: aborted records go and shadow nothing;
// committed transactional records are compacted by key; a marker stays in
// the pass that removed its transaction's data and goes in a later one,
// once older than delete.retention.ms; nothing at or past the last stable
// offset is touched.
func TestCompactTxnPasses(t *testing.T) {
	l, _ := openLog(t, newSim(30), Options{SegmentBytes: 600, IndexIntervalBytes: 256})
	x := txnLog{t, l}
	old := x.plain("a", "old-a", "b", "old-b")
	committed := x.txn(1, "a", "committed-a")
	aborted := x.txn(2, "a", "aborted-a", "b", "aborted-b") // later than the committed value of a
	abortMarker := x.marker(2, false, oldTs)
	commitMarker := x.marker(1, true, oldTs)
	youngMarker := x.marker(3, false, newTs) // a retried marker, nothing open: no data
	x.fill()
	aborts := []AbortedRange{{ProducerID: 2, FirstOffset: aborted, LastOffset: abortMarker}}
	view := &TxnView{StableOffset: l.NextOffset(), Aborted: func(from, to int64) []AbortedRange { return aborts }}
	now := time.UnixMilli(oldTs + 2_000_000)
	pass := func() {
		t.Helper()
		cfg := CleanConfig{DeleteRetentionMs: 1_000_000, Txns: view}
		for i := 0; ; i++ {
			done, err := l.CleanStep(now, cfg, l.LastIndex()+1)
			must(t, err)
			if done {
				return
			}
			if i > 1000 {
				t.Fatal("cleaner does not finish")
			}
		}
	}
	expect := func(when string, base int64, want ...string) {
		t.Helper()
		n, kvs := batchAt(t, l, base)
		if fmt.Sprint(kvs) != fmt.Sprint(want) || int(n) != len(want) {
			t.Fatalf("%s: batch at %d holds %d records %v, want %v", when, base, n, kvs, want)
		}
	}
	pass()
	expect("pass 1", old, "b=old-b")             // a: the committed value is later
	expect("pass 1", committed, "a=committed-a") // not shadowed by the aborted one
	expect("pass 1", aborted)                    // removed
	if _, kvs := batchAt(t, l, abortMarker); len(kvs) != 1 {
		t.Fatalf("pass 1 removed the abort marker with its data")
	}
	if st := l.Stats().Cleaner; st.AbortedRecordsRemoved != 2 || st.MarkersRemoved != 0 {
		t.Fatalf("pass 1 stats %+v", st)
	}
	// The next pass: the abort marker's data is gone, so it goes; the
	// commit marker's transaction still holds a record; the young marker
	// waits for delete.retention.ms. An open transaction holds the last
	// stable offset: its batch and everything after stay as they are.
	x.plain("b", "newer-b")
	x.fill()
	open := x.txn(4, "b", "open-b")
	x.plain("b", "after-open")
	x.fill()
	view.StableOffset = open
	pass()
	expect("pass 2", abortMarker)
	if n, _ := batchAt(t, l, commitMarker); n != 1 {
		t.Fatalf("pass 2 removed the commit marker of a transaction with data")
	}
	if n, _ := batchAt(t, l, youngMarker); n != 1 {
		t.Fatalf("pass 2 removed a marker younger than delete.retention.ms")
	}
	expect("pass 2", open, "b=open-b")
	// Transaction 4 commits and a newer a empties transaction 1: their
	// markers go a pass later.
	x.marker(4, true, oldTs)
	x.plain("a", "newest-a")
	x.fill()
	view.StableOffset = l.NextOffset()
	pass()
	expect("pass 3", committed)
	expect("pass 3", open) // committed, and b was written again after it
	if n, _ := batchAt(t, l, commitMarker); n != 1 {
		t.Fatalf("pass 3 removed the commit marker in the pass that emptied its data")
	}
	x.fill()
	view.StableOffset = l.NextOffset()
	pass()
	expect("pass 4", commitMarker)
	if st := l.Stats().Cleaner; st.MarkersRemoved != 3 {
		t.Fatalf("markers removed %d, want 3 (the young one stays)", st.MarkersRemoved)
	}
}
