package partition

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/node/records"
)

// Transaction-aware compaction (logstore/compact_txn.go) checked on a real
// partition: a random log of committed, aborted and open transactions and
// plain keyed batches is compacted pass after pass, and a read_committed
// reader (the client below drops batches exactly as franz-go does) must
// see each key's latest committed value, nothing aborted or open, before
// and after a restart that rebuilds the partition from the compacted log;
// the last stable offset, the open transactions and the producer table
// must be what they were before compaction.

// ctxRec is one record the model wrote.
type ctxRec struct {
	key, value string // value "" is a tombstone
	pid        int64  // -1: not transactional
	txn        int    // the producer's transaction number
}

type ctxModel struct {
	recs    map[int64]ctxRec // by offset
	outcome map[[2]int64]int // (pid, txn) -> 1 committed, 2 aborted; absent: open
}

// view is the model's read_committed view: each key's latest value among
// plain records and those of committed transactions below lso (absent if
// that is a tombstone).
func (m *ctxModel) view(lso int64) map[string]string {
	offs := make([]int64, 0, len(m.recs))
	for off := range m.recs {
		offs = append(offs, off)
	}
	slices.Sort(offs)
	out := map[string]string{}
	for _, off := range offs {
		r := m.recs[off]
		if off >= lso || (r.pid >= 0 && m.outcome[[2]int64{r.pid, int64(r.txn)}] != 1) {
			continue
		}
		if r.value == "" {
			delete(out, r.key)
		} else {
			out[r.key] = r.value
		}
	}
	return out
}

// keyedBatch builds a batch of keyed records (value "" a tombstone).
func keyedBatch(pid int64, seq int32, txn bool, kvs [][2]string, tsMs int64) ([]byte, records.Header) {
	recs := make([]records.Record, len(kvs))
	for i, kv := range kvs {
		recs[i] = records.Record{Key: []byte(kv[0])}
		if kv[1] != "" {
			recs[i].Value = []byte(kv[1])
		}
	}
	o := records.BuildOptions{BaseTimestamp: tsMs, Transactional: txn}
	if pid >= 0 {
		o.Producer = &records.Producer{ID: pid, Epoch: 0, BaseSequence: seq}
	}
	b := records.Build(o, recs)
	h, err := records.ParseHeader(b)
	if err != nil {
		panic(err)
	}
	return b, h
}

// readCommittedAll reads the partition from its start to its LSO the way a
// read_committed client does, maxBytes at a time, and returns every record
// it is given, by offset.
func readCommittedAll(t tb, p *Partition, maxBytes int) map[int64]records.Record {
	t.Helper()
	got := map[int64]records.Record{}
	lso := p.LastStableOffset()
	for off := p.StartOffset(); off < lso; {
		data, err := p.ReadTo(off, maxBytes, lso)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		aborted, n := p.ReadCommitted(off, data)
		if n <= 0 || n > len(data) {
			t.Fatalf("read at %d: serve %d of %d bytes", off, n, len(data))
		}
		next, err := kgoCommitted(data[:n], off, aborted, func(o int64, r records.Record) { got[o] = r })
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if next <= off {
			t.Fatalf("read at %d made no progress", off)
		}
		off = next
	}
	return got
}

// kgoCommitted is franz-go's read_committed filter (pkg/kgo/source.go,
// aborter): a listed producer's transactional batches are dropped from the
// smallest first offset listed for it until a control batch of it holds an
// abort record; control batches are never returned.
func kgoCommitted(data []byte, offset int64, aborted []AbortedTxn, keep func(int64, records.Record)) (int64, error) {
	bs, err := records.Split(data)
	if err != nil {
		return offset, err
	}
	ab := map[int64][]int64{}
	for _, a := range aborted {
		ab[a.ProducerID] = append(ab[a.ProducerID], a.FirstOffset)
	}
	for pid := range ab {
		slices.Sort(ab[pid])
	}
	next := offset
	for _, b := range bs {
		h, err := records.ParseHeader(b)
		if err != nil {
			return offset, err
		}
		next = h.NextOffset()
		abort := h.IsTransactional() && len(ab[h.ProducerID]) > 0 && h.BaseOffset >= ab[h.ProducerID][0]
		popped := false
		err = records.Records(b, func(r records.Record) error {
			o := h.BaseOffset + int64(r.OffsetDelta)
			if h.IsControl() {
				if abort && !popped && len(r.Key) >= 4 && r.Key[2] == 0 && r.Key[3] == 0 {
					ab[h.ProducerID], popped = ab[h.ProducerID][1:], true
				}
				return nil
			}
			if !abort && o >= offset {
				keep(o, r)
			}
			return nil
		})
		if err != nil {
			return offset, err
		}
	}
	return next, nil
}

// cleanAll runs compaction passes until the cleaner has nothing to do.
func cleanAll(t tb, r *rig, now time.Time) {
	t.Helper()
	cfg := logstore.CleanConfig{DeleteRetentionMs: 24 * 3600 * 1000, BytesPerStepMax: 512}
	for i := 0; ; i++ {
		if i > 10000 {
			t.Fatalf("the cleaner never finishes")
		}
		cfg.Txns = r.p.CleanView()
		done, err := r.log.CleanStep(now, cfg, r.rep.Applied()+1)
		if err != nil {
			t.Fatalf("clean: %v", err)
		}
		if done {
			return
		}
	}
}

func TestCompactTxnMatchesModel(t *testing.T) {
	var abortedGone, markersGone int64
	rapid.Check(t, func(rt *rapid.T) {
		r := newRig(rt, DefaultConfig())
		r.lead()
		m := &ctxModel{recs: map[int64]ctxRec{}, outcome: map[[2]int64]int{}}
		const pids = 3
		seq := map[int64]int32{}
		txnNo := map[int64]int{}
		open := map[int64]bool{}
		plainSeq := int32(0)
		n := 0
		ts := r.now.UnixMilli()
		write := func(pid int64, txn bool) {
			var kvs [][2]string
			for i := rapid.IntRange(1, 3).Draw(rt, "records"); i > 0; i-- {
				n++
				v := fmt.Sprintf("v%d%s", n, "-padding-padding-padding")
				if rapid.IntRange(0, 9).Draw(rt, "tombstone") == 0 {
					v = ""
				}
				kvs = append(kvs, [2]string{fmt.Sprintf("k%d", rapid.IntRange(0, 4).Draw(rt, "key")), v})
			}
			s := seq[pid]
			if pid < 0 {
				s = plainSeq
			}
			b, h := keyedBatch(pid, s, txn, kvs, ts)
			res, err := r.p.Append(b, h, r.now)
			if err != nil {
				rt.Fatalf("append pid %d: %v", pid, err)
			}
			r.drive()
			if pid >= 0 {
				seq[pid] += int32(len(kvs))
			}
			for i, kv := range kvs {
				m.recs[res.BaseOffset+int64(i)] = ctxRec{key: kv[0], value: kv[1], pid: pid, txn: txnNo[pid]}
			}
		}
		end := func(pid int64) {
			commit := rapid.Bool().Draw(rt, "commit")
			if _, err := r.p.AppendMarker(pid, 0, commit, 1, r.now); err != nil {
				rt.Fatalf("marker: %v", err)
			}
			r.drive()
			m.outcome[[2]int64{pid, int64(txnNo[pid])}] = map[bool]int{true: 1, false: 2}[commit]
			open[pid] = false
			txnNo[pid]++
		}
		steps := rapid.IntRange(10, 80).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			pid := int64(rapid.IntRange(0, pids).Draw(rt, "pid")) // pids: plain
			switch {
			case pid == pids:
				write(-1, false)
			case open[pid] && rapid.IntRange(0, 2).Draw(rt, "end") == 0:
				end(pid)
			default:
				open[pid] = true
				write(pid, true)
			}
		}
		lso, hw := r.p.LastStableOffset(), r.p.HighWatermark()
		producers, openTxns := r.p.applied.Clone(), r.p.txns.Clone().open
		check := func(when string) {
			if got, want := r.p.LastStableOffset(), lso; got != want {
				rt.Fatalf("%s: LSO %d, want %d", when, got, want)
			}
			if !reflect.DeepEqual(r.p.txns.open, openTxns) {
				rt.Fatalf("%s: open transactions %v, want %v", when, r.p.txns.open, openTxns)
			}
			if !reflect.DeepEqual(forgetCompactedCoordEpochs(rt, r.p.applied, producers), producers) {
				rt.Fatalf("%s: the producer table changed", when)
			}
			got := readCommittedAll(rt, r.p, rapid.SampledFrom([]int{200, 700, 1 << 20}).Draw(rt, "fetchBytes"))
			view := map[string]string{}
			offs := make([]int64, 0, len(got))
			for off := range got {
				offs = append(offs, off)
			}
			slices.Sort(offs)
			for _, off := range offs {
				rec, w := got[off], m.recs[off]
				if string(rec.Key) != w.key || string(rec.Value) != w.value {
					rt.Fatalf("%s: offset %d reads %q=%q, written %q=%q", when, off, rec.Key, rec.Value, w.key, w.value)
				}
				if w.pid >= 0 && m.outcome[[2]int64{w.pid, int64(w.txn)}] != 1 {
					rt.Fatalf("%s: offset %d of pid %d's transaction %d (outcome %d) read read_committed", when, off, w.pid, w.txn, m.outcome[[2]int64{w.pid, int64(w.txn)}])
				}
				if w.value == "" {
					delete(view, w.key)
				} else {
					view[w.key] = w.value
				}
			}
			if want := m.view(lso); !reflect.DeepEqual(view, want) {
				rt.Fatalf("%s: read_committed latest values %v, model %v", when, view, want)
			}
		}
		check("before compaction")
		// Passes with fresh segments between them, so that a second pass
		// sees the data the first one removed gone (markers go then).
		// Then every transaction still open ends, and two more passes run.
		later := r.now.Add(48 * time.Hour)
		for pass := 0; pass < 5; pass++ {
			if pass == 3 {
				for pid := int64(0); pid < pids; pid++ {
					if open[pid] {
						end(pid)
					}
				}
				lso, hw = r.p.LastStableOffset(), r.p.HighWatermark()
				producers, openTxns = r.p.applied.Clone(), r.p.txns.Clone().open
			}
			cleanAll(rt, r, later)
			check(fmt.Sprintf("after pass %d", pass))
			for segs := r.log.Stats().Segments; r.log.Stats().Segments <= segs; {
				write(-1, false)
			}
			lso, hw = r.p.LastStableOffset(), r.p.HighWatermark()
			producers, openTxns = r.p.applied.Clone(), r.p.txns.Clone().open
		}
		st := r.log.Stats().Cleaner
		abortedGone += st.AbortedRecordsRemoved
		markersGone += st.MarkersRemoved
		// The partition rebuilt from the compacted log by replay.
		r.restart()
		r.lead()
		if r.p.HighWatermark() < hw {
			rt.Fatalf("after restart: high watermark %d, want at least %d", r.p.HighWatermark(), hw)
		}
		check("after restart")
	})
	if abortedGone == 0 || markersGone == 0 {
		t.Fatalf("compaction removed %d aborted records and %d markers in all cases: the test does not exercise it", abortedGone, markersGone)
	}
	t.Logf("compaction removed %d aborted records and %d markers", abortedGone, markersGone)
}

// emptied returns batch b with every record removed, as compaction leaves
// a batch (offsets, producer and attributes kept).
func emptied(t *testing.T, b []byte) []byte {
	t.Helper()
	out, _, err := records.Filter(b, func(records.Record) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func at(t *testing.T, b []byte, base int64) ([]byte, records.Header) {
	t.Helper()
	b = append([]byte(nil), b...)
	if err := records.SetBaseOffset(b, base); err != nil {
		t.Fatal(err)
	}
	h, err := records.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	return b, h
}

// A replica can hold an aborted transaction's batches whole and its marker
// emptied: it had the data before the leader cleaned both, and was sent the
// cleaned marker. The empty marker must count as an abort (hiding the
// data), and a read_committed answer must stop before it, since a client
// only stops dropping the producer's batches at an abort record; the next
// answer, from the marker on, leaves the transaction out and shows the
// producer's next transaction.
func TestCompactTxnEmptiedMarkerOverWholeData(t *testing.T) {
	p := New("t", 0, DefaultConfig())
	data1, h1 := keyedBatch(7, 0, true, [][2]string{{"k", "aborted-1"}, {"k", "aborted-2"}}, txnBatchTs) // 0-1
	data1, h1 = at(t, data1, 0)
	marker, hm := at(t, emptied(t, records.BuildMarker(records.Producer{ID: 7}, records.Marker{Type: records.ControlAbort}, 0, 0, txnBatchTs)), 2)
	data2, h2 := keyedBatch(7, 2, true, [][2]string{{"k", "committed"}}, txnBatchTs) // 3
	data2, h2 = at(t, data2, 3)
	commit, hc := at(t, records.BuildMarker(records.Producer{ID: 7}, records.Marker{Type: records.ControlCommit}, 0, 0, txnBatchTs), 4)
	for _, b := range []struct {
		h records.Header
		d []byte
	}{{h1, data1}, {hm, marker}, {h2, data2}, {hc, commit}} {
		p.txns.Apply(b.h, b.d)
	}
	if got := p.txns.Aborted(0, 5); len(got) != 1 || got[0] != (AbortedTxn{ProducerID: 7, FirstOffset: 0, LastOffset: 2}) {
		t.Fatalf("aborted index %v: the emptied marker must end the transaction as an abort", got)
	}
	if len(p.txns.open) != 0 {
		t.Fatalf("open transactions %v", p.txns.open)
	}
	log := slices.Concat(data1, marker, data2, commit)
	var seen []string
	read := func(from int64, data []byte) int64 {
		aborted, n := p.ReadCommitted(from, data)
		next, err := kgoCommitted(data[:n], from, aborted, func(_ int64, r records.Record) { seen = append(seen, string(r.Value)) })
		if err != nil {
			t.Fatal(err)
		}
		return next
	}
	if next := read(0, log); next != 2 {
		t.Fatalf("first answer ends at %d, want 2 (before the emptied marker)", next)
	}
	if next := read(2, log[len(data1):]); next != 5 {
		t.Fatalf("second answer ends at %d, want 5", next)
	}
	if !slices.Equal(seen, []string{"committed"}) {
		t.Fatalf("read_committed saw %q, want only the committed value", seen)
	}
	// Both emptied (as on the replica that cleaned): one answer, the
	// transaction left out.
	seen = nil
	if next := read(0, slices.Concat(emptied(t, data1), marker, data2, commit)); next != 5 || !slices.Equal(seen, []string{"committed"}) {
		t.Fatalf("emptied data and marker: read to %d, saw %q", next, seen)
	}
}

// forgetCompactedCoordEpochs returns a copy of got with each producer's
// coordinator epoch set to want's where got has none: a replay of the
// compacted log cannot read the coordinator epoch of a marker the cleaner
// removed (a marker that old, below the LSO in a sealed segment, fences no
// coordinator still sending). Any other difference is left to be found;
// a coordinator epoch that is neither want's nor none fails here.
func forgetCompactedCoordEpochs(rt *rapid.T, got, want *Producers) *Producers {
	c := got.Clone()
	for e := c.oldest; e != nil; e = e.next {
		w, ok := want.byID[e.id]
		if !ok {
			continue
		}
		switch e.st.CoordEpoch {
		case w.st.CoordEpoch:
		case 0:
			e.st.CoordEpoch = w.st.CoordEpoch
		default:
			rt.Fatalf("producer %d: coordinator epoch %d, want %d (or none, its marker compacted)", e.id, e.st.CoordEpoch, w.st.CoordEpoch)
		}
	}
	return c
}
