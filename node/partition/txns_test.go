package partition

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"pgregory.net/rapid"

	"github.com/floe-broker/floe/node/records"
)

// txnBatchTs is the timestamp of txnBatch's batches: the rig's clock
// (rig_test.go), which markers are stamped with, so a marker does not move
// the log's time past producer.id.expiration.ms and expire the producer
// (which would hide a missing epoch fence behind a fresh entry).
var txnBatchTs = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

// txnBatch builds a transactional batch of n records.
func txnBatch(pid int64, epoch int16, seq int32, n int) ([]byte, records.Header) {
	recs := make([]records.Record, n)
	for i := range recs {
		recs[i] = records.Record{Value: []byte{byte(i), byte(seq)}}
	}
	b := records.Build(records.BuildOptions{BaseTimestamp: txnBatchTs, Transactional: true,
		Producer: &records.Producer{ID: pid, Epoch: epoch, BaseSequence: seq}}, recs)
	h, err := records.ParseHeader(b)
	if err != nil {
		panic(err)
	}
	return b, h
}

func (r *rig) produceTxn(pid int64, epoch int16, seq int32, n int) (AppendResult, error) {
	b, h := txnBatch(pid, epoch, seq, n)
	return r.p.Append(b, h, r.now)
}

func TestTxnStableOffsetAndAbortedIndex(t *testing.T) {
	r := newRig(t, DefaultConfig())
	r.lead()
	if _, err := r.produceTxn(7, 0, 0, 2); err != nil { // offsets 0-1
		t.Fatal(err)
	}
	mustAppend(t, r, -1, 0, 0, 3) // 2-4
	r.drive()
	if lso, hw := r.p.LastStableOffset(), r.p.HighWatermark(); lso != 0 || hw != 5 {
		t.Fatalf("open transaction: lso %d hw %d, want 0 5", lso, hw)
	}
	// The producer may not write outside its transaction.
	_, err := r.produce(7, 0, 2, 1)
	expectErr(t, err, kerr.InvalidTxnState)
	if _, err := r.p.AppendMarker(7, 0, false, 1, r.now); err != nil { // 5
		t.Fatal(err)
	}
	r.drive()
	if lso := r.p.LastStableOffset(); lso != 6 {
		t.Fatalf("after abort: lso %d, want 6", lso)
	}
	want := []AbortedTxn{{ProducerID: 7, FirstOffset: 0, LastOffset: 5}}
	if got := r.p.AbortedTxns(0, 6); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
	if got := r.p.AbortedTxns(6, 10); len(got) != 0 {
		t.Fatalf("aborted after the marker: %+v", got)
	}
	// A second transaction, committed.
	if _, err := r.produceTxn(7, 0, 2, 1); err != nil { // 6
		t.Fatal(err)
	}
	r.drive()
	if lso := r.p.LastStableOffset(); lso != 6 {
		t.Fatalf("second transaction open: lso %d, want 6", lso)
	}
	if _, err := r.p.AppendMarker(7, 0, true, 1, r.now); err != nil { // 7
		t.Fatal(err)
	}
	// A retried marker is written and changes nothing.
	if _, err := r.p.AppendMarker(7, 0, true, 1, r.now); err != nil { // 8
		t.Fatal(err)
	}
	r.drive()
	if lso, hw := r.p.LastStableOffset(), r.p.HighWatermark(); lso != hw || hw != 9 {
		t.Fatalf("after commit: lso %d hw %d", lso, hw)
	}
	if got := r.p.AbortedTxns(0, 9); len(got) != 1 {
		t.Fatalf("commit recorded as abort: %+v", got)
	}
}

func TestTxnMarkerFencesZombie(t *testing.T) {
	r := newRig(t, DefaultConfig())
	r.lead()
	if _, err := r.produceTxn(7, 3, 0, 1); err != nil {
		t.Fatal(err)
	}
	// The coordinator fenced the producer: abort at epoch 4.
	if _, err := r.p.AppendMarker(7, 4, false, 1, r.now); err != nil {
		t.Fatal(err)
	}
	_, err := r.produceTxn(7, 3, 1, 1)
	expectErr(t, err, kerr.InvalidProducerEpoch)
	_, err = r.p.AppendMarker(7, 3, true, 1, r.now)
	expectErr(t, err, kerr.InvalidProducerEpoch)
	// The new producer (epoch 5) starts at sequence 0.
	if _, err := r.produceTxn(7, 5, 0, 1); err != nil {
		t.Fatal(err)
	}
	r.drive()
	if r.p.OpenTxns() != 1 {
		t.Fatalf("open %d", r.p.OpenTxns())
	}
}

// TestTxnMarkerFromDeposedCoordinatorFenced: a marker from a coordinator
// older than the producer's last marker here is refused, and the
// producer's open transaction stays open for its own coordinator's marker.
// Simulator seed 942289: coordinator epoch 4 had aborted T5 here and T7
// (same producer, same epoch) had begun when the deposed coordinator of
// epoch 3, resuming from a pause, resent T5's abort; it closed T7 as
// aborted, epoch 4's commit marker then found nothing open, and T7's
// acknowledged commit was not visible. The fence outlives a restart (the
// replay rebuilds it from the markers in the log).
func TestTxnMarkerFromDeposedCoordinatorFenced(t *testing.T) {
	r := newRig(t, DefaultConfig())
	r.lead()
	if _, err := r.produceTxn(7, 0, 0, 1); err != nil { // 0: T5
		t.Fatal(err)
	}
	if _, err := r.p.AppendMarker(7, 0, false, 4, r.now); err != nil { // 1: T5 aborted by coordinator epoch 4
		t.Fatal(err)
	}
	if _, err := r.produceTxn(7, 0, 1, 1); err != nil { // 2: T7 opens
		t.Fatal(err)
	}
	_, err := r.p.AppendMarker(7, 0, false, 3, r.now) // coordinator epoch 3 resends T5's abort
	expectErr(t, err, kerr.TransactionCoordinatorFenced)
	r.drive()
	if o, ok := r.p.txns.Open(7); !ok || o.FirstOffset != 2 {
		t.Fatalf("T7 open %v at %d, want open at 2: the deposed coordinator's abort closed it", ok, o.FirstOffset)
	}
	r.restart()
	r.lead()
	_, err = r.p.AppendMarker(7, 0, false, 3, r.now)
	expectErr(t, err, kerr.TransactionCoordinatorFenced)
	if _, err := r.p.AppendMarker(7, 0, true, 4, r.now); err != nil { // 3: T7 committed
		t.Fatal(err)
	}
	r.drive()
	want := []AbortedTxn{{ProducerID: 7, FirstOffset: 0, LastOffset: 1}}
	if got := r.p.AbortedTxns(0, r.p.HighWatermark()); !reflect.DeepEqual(got, want) || r.p.OpenTxns() != 0 || r.p.HighWatermark() != 4 {
		t.Fatalf("aborted %+v (want %+v), open %d, hw %d (want 4)", got, want, r.p.OpenTxns(), r.p.HighWatermark())
	}
	// A newer coordinator's marker is taken.
	if _, err := r.p.AppendMarker(7, 0, true, 5, r.now); err != nil {
		t.Fatal(err)
	}
}

func TestTxnStateSurvivesRestartAndFailover(t *testing.T) {
	r := newRig(t, DefaultConfig())
	r.lead()
	if _, err := r.produceTxn(7, 0, 0, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := r.produceTxn(8, 0, 0, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := r.p.AppendMarker(8, 0, false, 1, r.now); err != nil {
		t.Fatal(err)
	}
	r.drive()
	cp, lso := r.p.Checkpoint(), r.p.LastStableOffset()
	c, err := DecodeCheckpoint(cp)
	if err != nil || !reflect.DeepEqual(c.Txns, r.p.txns) {
		t.Fatalf("checkpoint round trip: %v, %+v vs %+v", err, c.Txns, r.p.txns)
	}
	r.restart()
	r.lead() // a ready leader has applied everything committed before
	if !bytes.Equal(r.p.Checkpoint(), cp) || r.p.LastStableOffset() != lso || lso != 0 {
		t.Fatalf("after restart: lso %d (want %d), checkpoint equal %v", r.p.LastStableOffset(), lso, bytes.Equal(r.p.Checkpoint(), cp))
	}
	// The new leader's pending view knows the open transaction.
	_, err = r.produce(7, 0, 2, 1)
	expectErr(t, err, kerr.InvalidTxnState)
	if !r.p.PendingOpenAt(7, 0) || r.p.PendingOpenAt(7, 1) || r.p.PendingOpenAt(8, 0) {
		t.Fatalf("pending open: 7 at 0 %v, 7 at 1 %v, 8 %v", r.p.PendingOpenAt(7, 0), r.p.PendingOpenAt(7, 1), r.p.PendingOpenAt(8, 0))
	}
}

func TestCheckpointRejectsBadTxns(t *testing.T) {
	tx := NewTxns()
	tx.aborted = []AbortedTxn{{1, 5, 9}, {2, 1, 4}} // markers out of order
	b := EncodeCheckpoint(Checkpoint{Txns: tx})
	if _, err := DecodeCheckpoint(b); err == nil {
		t.Fatal("out-of-order aborted transactions decoded")
	}
	for i := 1; i < len(b); i++ {
		if _, err := DecodeCheckpoint(b[:i]); err == nil && i < len(b) {
			c, _ := DecodeCheckpoint(b[:i])
			if c.Txns != nil && len(c.Txns.aborted) == 2 {
				t.Fatalf("truncated checkpoint of %d bytes decoded in full", i)
			}
		}
	}
}

// TestTxnsMatchModel applies random transactional, plain and marker batches
// to Txns and compares the stable offset and aborted list with a naive
// model that rescans the whole log each time; the stable offset never goes
// back.
func TestTxnsMatchModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		type ent struct {
			pid     int64
			txn     bool
			control bool
			commit  bool
			off     int64
		}
		var log []ent
		tx := NewTxns()
		next, lastLSO := int64(0), int64(0)
		for step := 0; step < 60; step++ {
			pid := int64(rapid.IntRange(-1, 3).Draw(rt, "pid"))
			kind := rapid.IntRange(0, 3).Draw(rt, "kind")
			n := rapid.IntRange(1, 3).Draw(rt, "n")
			var b []byte
			var e ent
			switch {
			case pid < 0 || kind == 0:
				b, _ = batch(pid, 0, 0, n)
				e = ent{pid: pid}
			case kind == 1:
				b, _ = txnBatch(pid, 0, 0, n)
				e = ent{pid: pid, txn: true}
			default:
				commit := kind == 3
				typ := records.ControlAbort
				if commit {
					typ = records.ControlCommit
				}
				b = records.BuildMarker(records.Producer{ID: pid}, records.Marker{Type: typ}, 0, 0, 0)
				e = ent{pid: pid, txn: true, control: true, commit: commit}
				n = 1
			}
			if err := records.SetBaseOffset(b, next); err != nil {
				rt.Fatal(err)
			}
			h, _ := records.ParseHeader(b)
			tx.Apply(h, b)
			e.off = next
			log = append(log, e)
			next += int64(n)

			// The model: rescan.
			open := map[int64]int64{}
			var aborted []AbortedTxn
			for _, x := range log {
				switch {
				case !x.txn:
				case !x.control:
					if _, ok := open[x.pid]; !ok {
						open[x.pid] = x.off
					}
				default:
					if f, ok := open[x.pid]; ok {
						delete(open, x.pid)
						if !x.commit {
							aborted = append(aborted, AbortedTxn{x.pid, f, x.off})
						}
					}
				}
			}
			lso := next
			for _, f := range open {
				lso = min(lso, f)
			}
			if got := tx.StableOffset(next); got != lso || got < lastLSO {
				rt.Fatalf("lso %d, model %d, before %d", got, lso, lastLSO)
			}
			lastLSO = lso
			from := int64(rapid.IntRange(0, int(next)).Draw(rt, "from"))
			to := from + int64(rapid.IntRange(0, 10).Draw(rt, "len"))
			var want []AbortedTxn
			for _, a := range aborted {
				if a.LastOffset >= from && a.FirstOffset < to {
					want = append(want, a)
				}
			}
			if got := tx.Aborted(from, to); !reflect.DeepEqual(got, want) {
				rt.Fatalf("aborted [%d,%d): %+v, model %+v", from, to, got, want)
			}
		}
	})
}
