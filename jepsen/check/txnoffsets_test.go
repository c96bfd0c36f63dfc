package check

import (
	"fmt"
	"sort"
	"testing"

	"github.com/floe-broker/floe/jepsen/history"
)

// offsetTxns: producer p's transactions T1 (committed, commit asked at
// 10), T2 (aborted) and T3 (committed, asked at 30), each sending group g
// partition 0 its number.
func offsetTxns() []*Txn {
	mk := func(name string, n int64, o TxnOutcome, asked int64) *Txn {
		return &Txn{Name: name, Producer: "p", Outcome: o, Group: "g", Offsets: map[int32]int64{0: n}, CommitAsked: asked}
	}
	return []*Txn{mk("T1", 1, TxnCommitted, 10), mk("T2", 2, TxnAborted, 0), mk("T3", 3, TxnCommitted, 30)}
}

func offsetKinds(as []TxnAnomaly) string {
	var ks []string
	for _, a := range as {
		ks = append(ks, a.Kind)
	}
	sort.Strings(ks)
	return fmt.Sprint(ks)
}

// A clean history of offset reads passes; each anomaly planted alone is
// reported as its kind, once.
func TestTxnOffsetAnomalies(t *testing.T) {
	rd := func(off, sent, done int64, final bool) TxnOffsetRead {
		return TxnOffsetRead{Group: "g", Partition: 0, Offset: off, Sent: sent, Done: done, Final: final}
	}
	clean := []TxnOffsetRead{
		rd(-1, 1, 2, false), // nothing yet
		rd(1, 11, 12, false),
		rd(-1, 5, 13, false), // overlaps the commit: may see nothing
		rd(1, 31, 32, false), // T3 asked, not yet visible
		rd(3, 33, 34, false),
		rd(3, 40, 41, true),
	}
	if as := TxnOffsetAnomalies(offsetTxns(), clean); len(as) != 0 {
		t.Fatalf("clean history: %v", as)
	}
	for _, c := range []struct {
		name string
		add  TxnOffsetRead
		want string
	}{
		// Each also makes the read of 1 at 31 a regression.
		{"read before its commit was asked", rd(3, 20, 21, false), "[offset-regression offset-uncommitted]"},
		{"aborted transaction's offset", rd(2, 20, 21, false), "[offset-aborted offset-regression]"},
		{"offset nobody sent", rd(7, 20, 21, false), "[offset-regression offset-unknown]"},
		{"went back after 3 was read", rd(1, 35, 36, false), "[offset-regression]"},
		{"none after 1 was read", rd(-1, 13, 14, false), "[offset-regression]"},
		{"final read lost T3", rd(1, 50, 51, true), "[offset-lost offset-regression]"},
	} {
		as := TxnOffsetAnomalies(offsetTxns(), append(append([]TxnOffsetRead(nil), clean...), c.add))
		if got := offsetKinds(as); got != c.want {
			t.Errorf("%s: got %s (%v), want %s", c.name, got, as, c.want)
		}
	}
	// Another group's offsets are not this group's.
	other := rd(2, 42, 43, false)
	other.Group = "h"
	if got := offsetKinds(TxnOffsetAnomalies(offsetTxns(), append(clean, other))); got != "[offset-unknown]" {
		t.Errorf("other group: %s", got)
	}
}

// offsetTxn records a transaction of producer id sending its group
// offset off on partition 0, asking to commit (at the recorder's time)
// unless abort.
func (h *txnHist) offsetTxn(id string, abort bool, off int64, val string) {
	w := []history.Record{{Topic: "tx", Partition: 0, Offset: -1, Value: val}}
	inv := h.rec.Invoke(history.Op{Process: 1, F: history.Txn, Group: id, Records: w, Abort: abort,
		Offsets: []history.Offset{{Topic: "tx", Partition: 0, Offset: off}}})
	done := history.Op{Abort: abort}
	if !abort {
		done.CommitAt = h.rec.Now()
	}
	h.rec.Complete(inv, history.OK, done)
}

// offsets records a txn-offsets (or txn-offsets-final) read of group id.
func (h *txnHist) offsets(f history.Func, id string, off int64) {
	inv := h.rec.Invoke(history.Op{Process: 3, F: f, Group: id})
	h.rec.Complete(inv, history.OK, history.Op{Group: id, Offsets: []history.Offset{{Topic: "tx", Partition: 0, Offset: off}}})
}

// The Docker suite's history form of the same check: a clean history
// passes the txn checker; offsets read before the commit, of an aborted
// transaction, or lost in the final read fail it.
func TestTxnOffsetsHistory(t *testing.T) {
	base := func() *txnHist {
		h := newTxnHist()
		h.offsetTxn("a", false, 1, "v1")
		h.offsetTxn("a", true, 2, "v2")
		h.read(history.TxnFinal, history.ReadCommitted, 0, 2, 2, recs(0, "v1"))
		h.offsets(history.TxnOffsets, "a", 1)
		return h
	}
	h := base()
	h.offsets(history.TxnOffsetsFinal, "a", 1)
	rep := mustValid(t, h.rec.History(), Options{})
	if r, _ := rep.Result(TxnOutcomes); r.Stats["offset-reads"] != 2 {
		t.Errorf("stats %v, want 2 offset reads", r.Stats)
	}

	h = base()
	h.offsets(history.TxnOffsets, "a", 2)
	h.offsets(history.TxnOffsetsFinal, "a", -1)
	if c := counts(Check(h.rec.History(), Options{}), TxnOutcomes); c["offset-aborted"] != 1 || c["offset-lost"] != 1 || c["offset-regression"] != 1 {
		t.Errorf("counts %v, want offset-aborted, offset-lost and offset-regression once", c)
	}

	// An offset read between the TxnOffsetCommit and the commit.
	h = newTxnHist()
	inv := h.rec.Invoke(history.Op{Process: 1, F: history.Txn, Group: "a", Records: recs(0, "v1"),
		Offsets: []history.Offset{{Topic: "tx", Partition: 0, Offset: 1}}})
	h.offsets(history.TxnOffsets, "a", 1)
	h.rec.Complete(inv, history.OK, history.Op{CommitAt: h.rec.Now()})
	h.read(history.TxnFinal, history.ReadCommitted, 0, 1, 1, recs(0, "v1"))
	if c := counts(Check(h.rec.History(), Options{}), TxnOutcomes); c["offset-uncommitted"] != 1 {
		t.Errorf("counts %v, want offset-uncommitted 1", c)
	}
}
