package check

import (
	"fmt"
	"testing"

	"github.com/floe-broker/floe/jepsen/history"
)

func TestFindCycle(t *testing.T) {
	for _, c := range []struct {
		edges [][]int
		want  string
	}{
		{[][]int{{1}, {2}, {}}, "[]"},
		{[][]int{{1, 2}, {2}, {}}, "[]"},
		{[][]int{{1}, {2}, {0}}, "[0 1 2]"},
		{[][]int{{1}, {2}, {1}}, "[1 2]"},
		{[][]int{{}, {1}}, "[1]"},
	} {
		if got := fmt.Sprint(findCycle(c.edges)); got != c.want {
			t.Errorf("findCycle(%v) = %s, want %s", c.edges, got, c.want)
		}
	}
}

// txnHist builds transactional histories on a fake clock that advances
// 1 ms per event.
type txnHist struct {
	rec *history.Recorder
	t   int64
}

func newTxnHist() *txnHist {
	h := &txnHist{}
	h.rec = history.NewRecorder(nil, func() int64 { h.t += 1e6; return h.t })
	return h
}

func recs(part int32, vals ...string) []history.Record {
	var out []history.Record
	for i, v := range vals {
		out = append(out, history.Record{Topic: "tx", Partition: part, Offset: int64(i), Value: v})
	}
	return out
}

// txn records one transaction of producer id writing vals (one per
// partition 0, 1, ...), told typ with abort, having read reads.
func (h *txnHist) txn(id string, abort bool, typ history.Type, reads []history.Record, vals ...string) {
	var w []history.Record
	for i, v := range vals {
		w = append(w, history.Record{Topic: "tx", Partition: int32(i), Offset: -1, Value: v})
	}
	inv := h.rec.Invoke(history.Op{Process: 1, F: history.Txn, Group: id, Records: w, Abort: abort})
	h.rec.Complete(inv, typ, history.Op{Abort: abort, Reads: reads})
}

// read records a txn-read (or txn-final) of partition p.
func (h *txnHist) read(f history.Func, iso string, p int32, lso, hwm int64, got []history.Record) {
	inv := h.rec.Invoke(history.Op{Process: 2, F: f, Isolation: iso, Offsets: []history.Offset{{Topic: "tx", Partition: p}}})
	h.rec.Complete(inv, history.OK, history.Op{Records: got,
		HWMs: []history.Offset{{Topic: "tx", Partition: p, Offset: hwm}},
		LSOs: []history.Offset{{Topic: "tx", Partition: p, Offset: lso}}})
}

func counts(rep Report, checker string) map[string]int {
	r, _ := rep.Result(checker)
	return r.Counts
}

// A clean transactional history passes every checker; the same history
// with an aborted transaction made visible, a read_committed read of it
// during the run, an LSO going back and a phantom value fails the right
// checkers.
func TestTxnHistoryCheckers(t *testing.T) {
	clean := func(h *txnHist) {
		h.txn("a", false, history.OK, nil, "v1", "v2")       // committed on 0 and 1
		h.txn("b", true, history.OK, nil, "v3")              // aborted on 0
		h.txn("a", false, history.Info, recs(0, "v1"), "v4") // unknown, invisible
		h.read(history.TxnRead, history.ReadUncommitted, 0, 1, 3, recs(0, "v1", "v3"))
		h.read(history.TxnRead, history.ReadCommitted, 0, 2, 3, recs(0, "v1"))
	}
	h := newTxnHist()
	clean(h)
	h.read(history.TxnFinal, history.ReadCommitted, 0, 3, 3, recs(0, "v1"))
	h.read(history.TxnFinal, history.ReadCommitted, 1, 1, 1, recs(1, "v2"))
	rep := mustValid(t, h.rec.History(), Options{})
	if r, _ := rep.Result(TxnOutcomes); r.Stats["committed"] != 1 || r.Stats["aborted"] != 1 || r.Stats["unknown"] != 1 {
		t.Fatalf("txn stats %v", r.Stats)
	}

	h = newTxnHist()
	clean(h)
	h.read(history.TxnRead, history.ReadCommitted, 0, 1, 3, recs(0, "v1", "v3")) // LSO back from 2; reads aborted v3
	h.read(history.TxnRead, history.ReadUncommitted, 1, 2, 1, recs(1, "zz"))     // LSO above HWM; phantom
	h.read(history.TxnFinal, history.ReadCommitted, 0, 3, 3, recs(0, "v1", "v3"))
	h.read(history.TxnFinal, history.ReadCommitted, 1, 1, 1, nil)
	rep = Check(h.rec.History(), Options{})
	if c := counts(rep, TxnOutcomes); c["aborted-read"] != 1 || c["lost-write"] != 1 || c["uncommitted-read"] != 0 {
		t.Errorf("txn counts %v, want aborted-read 1, lost-write 1 (v3 is visible in the final read, so reading it is no uncommitted read)", c)
	}
	// Partition 0 back from 2 to 1; partition 1 above its HWM, then its
	// final read back from 2 to 1.
	if c := counts(rep, LSORegression); c[LSORegression] != 3 {
		t.Errorf("lso-regression counts %v, want 3", c)
	}
	if c := counts(rep, TxnReads); c[UnexpectedValue] != 1 {
		t.Errorf("txn-reads counts %v, want unexpected-value 1", c)
	}

	// A read_committed read of a value that never committed, and a
	// missing final read.
	h = newTxnHist()
	clean(h)
	h.read(history.TxnRead, history.ReadCommitted, 0, 3, 3, recs(0, "v1", "v3"))
	h.read(history.TxnFinal, history.ReadCommitted, 0, 3, 3, recs(0, "v1"))
	rep = Check(h.rec.History(), Options{})
	r, _ := rep.Result(TxnOutcomes)
	if r.Valid != Unknown {
		t.Errorf("no final read of partition 1, yet %s", r.Valid)
	}
	h.read(history.TxnFinal, history.ReadCommitted, 1, 1, 1, recs(1, "v2"))
	if c := counts(Check(h.rec.History(), Options{}), TxnOutcomes); c["uncommitted-read"] != 1 {
		t.Errorf("txn counts %v, want uncommitted-read 1", c)
	}
}
