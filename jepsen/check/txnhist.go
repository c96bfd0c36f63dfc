package check

import (
	"fmt"
	"sort"

	"github.com/floe-broker/floe/jepsen/history"
)

// The transactional checkers on a history (the Docker suite's
// transactional workload records history.Txn, TxnRead and TxnFinal
// operations). A history without them (the log workload's, the
// simulator's) passes them with nothing to check.

// txnOutcome is what the producer of a Txn operation was told: committed
// only when its EndTxn(commit) was acknowledged; aborted when its abort
// was, or when it never asked to commit; unknown otherwise.
func txnOutcome(op history.Operation) TxnOutcome {
	switch {
	case op.Done.Abort:
		return TxnAborted
	case op.Done.Type == history.OK:
		return TxnCommitted
	default:
		return TxnUnknown
	}
}

// checkTxnOutcomes runs TxnAnomalies (the simulator's checker) on the
// transactions, the final read_committed reads and the read_committed
// reads of the run.
func checkTxnOutcomes(a *analysis, opts Options) Result {
	r := newResult(TxnOutcomes, opts)
	var txns []*Txn
	topics := map[string]bool{}
	written := map[int32]bool{}
	final := map[int32][]string{}
	readDuring := map[string]bool{}
	finals := map[int32]bool{}
	var offsets []TxnOffsetRead
	for _, op := range a.ops {
		switch op.Invoke.F {
		case history.Txn:
			t := &Txn{Name: fmt.Sprintf("T%d", op.Invoke.Index), Producer: fmt.Sprint(op.Invoke.Process),
				Values: map[int32][]string{}, Outcome: txnOutcome(op)}
			if op.Invoke.Group != "" {
				t.Producer = op.Invoke.Group // the transactional id
			}
			for _, rec := range op.Invoke.Records {
				topics[rec.Topic], written[rec.Partition] = true, true
				t.Values[rec.Partition] = append(t.Values[rec.Partition], rec.Value)
			}
			for _, rec := range op.Done.Reads {
				t.Reads = append(t.Reads, rec.Value)
			}
			txnOffsetsSent(t, op)
			txns = append(txns, t)
		case history.TxnOffsets, history.TxnOffsetsFinal:
			offsets = append(offsets, txnOffsetReads(op)...)
		case history.TxnRead:
			if op.Done.Type == history.OK && op.Invoke.Isolation == history.ReadCommitted {
				for _, rec := range op.Done.Records {
					readDuring[rec.Value] = true
				}
			}
		case history.TxnFinal:
			if op.Done.Type == history.OK {
				p := op.TP().Partition
				finals[p] = true
				for _, rec := range op.Done.Records {
					final[p] = append(final[p], rec.Value)
				}
			}
		}
	}
	r.stat("transactions", int64(len(txns)))
	if len(txns) == 0 {
		return *r
	}
	if len(topics) > 1 {
		r.unknown("transactions write %d topics; the checker takes one", len(topics))
		return *r
	}
	for _, p := range sortedInt32Keys(written) {
		if !finals[p] {
			r.unknown("no final read_committed read of partition %d", p)
		}
	}
	if r.Valid == Unknown {
		return *r
	}
	anomalies, n := TxnAnomalies(txns, final, readDuring)
	anomalies = append(anomalies, TxnOffsetAnomalies(txns, offsets)...)
	for _, an := range anomalies {
		r.add(an.Kind, Detail{Msg: an.Msg})
	}
	r.stat("committed", int64(n.Committed))
	r.stat("aborted", int64(n.Aborted))
	r.stat("unknown", int64(n.Unknown))
	r.stat("read-committed-values", int64(len(readDuring)))
	r.stat("offset-reads", int64(len(offsets)))
	return *r
}

// txnOffsetsSent fills in the offsets a Txn operation sent to its
// transaction (group: its transactional id) and when it asked to commit.
func txnOffsetsSent(t *Txn, op history.Operation) {
	if len(op.Invoke.Offsets) == 0 {
		return
	}
	t.Group, t.Offsets, t.CommitAsked = op.Invoke.Group, map[int32]int64{}, op.Done.CommitAt
	for _, o := range op.Invoke.Offsets {
		t.Offsets[o.Partition] = o.Offset
	}
}

// txnOffsetReads are the partitions a successful TxnOffsets or
// TxnOffsetsFinal operation read.
func txnOffsetReads(op history.Operation) []TxnOffsetRead {
	if op.Done.Type != history.OK {
		return nil
	}
	out := make([]TxnOffsetRead, 0, len(op.Done.Offsets))
	for _, o := range op.Done.Offsets {
		out = append(out, TxnOffsetRead{Group: op.Invoke.Group, Partition: o.Partition, Offset: o.Offset,
			Sent: op.Invoke.Time, Done: op.Done.Time, Final: op.Invoke.F == history.TxnOffsetsFinal})
	}
	return out
}

// checkLSORegression: a partition's last stable offset never exceeds the
// high watermark of the same response, and never goes back in real time:
// a read that began after another ended sees at least its LSO (the
// simulator's rule, sim/txn.go sawLSO, on real-time intervals).
func checkLSORegression(a *analysis, opts Options) Result {
	r := newResult(LSORegression, opts)
	bounds := map[history.TP][]bound{}
	obs := map[history.TP][]observation{}
	var tps []history.TP
	for _, op := range a.ops {
		if (op.Invoke.F != history.TxnRead && op.Invoke.F != history.TxnFinal) || op.Done.Type != history.OK {
			continue
		}
		for i, lso := range op.Done.LSOs {
			tp := lso.TP()
			if _, ok := obs[tp]; !ok {
				tps = append(tps, tp)
			}
			if i < len(op.Done.HWMs) && lso.Offset > op.Done.HWMs[i].Offset {
				d := tpDetail(tp, fmt.Sprintf("last stable offset %d above the high watermark %d", lso.Offset, op.Done.HWMs[i].Offset))
				d.Events = []int64{op.Done.Index}
				r.add(LSORegression, d)
			}
			bounds[tp] = append(bounds[tp], bound{op.Done.Time, lso.Offset, op.Done.Index})
			obs[tp] = append(obs[tp], observation{op.Invoke.Time, op.Done.Time, lso.Offset, op.Done.Index})
		}
	}
	sortTPs(tps)
	for _, tp := range tps {
		r.stat("observations", int64(len(obs[tp])))
		sweepRegressions(r, LSORegression, "last stable offset", tp, bounds[tp], obs[tp])
	}
	return *r
}

// checkTxnReads: every value a transactional read returned (at either
// isolation level, inside transactions, in the final read) was written by
// a transaction, to that partition; and one offset never holds two values.
func checkTxnReads(a *analysis, opts Options) Result {
	r := newResult(TxnReads, opts)
	writtenTo := map[string]history.TP{}
	at := map[history.TP]map[int64]string{}
	for _, op := range a.ops {
		if op.Invoke.F == history.Txn {
			for _, rec := range op.Invoke.Records {
				writtenTo[rec.Value] = rec.TP()
			}
		}
	}
	for _, op := range a.ops {
		var recs []history.Record
		switch op.Invoke.F {
		case history.Txn:
			recs = op.Done.Reads
		case history.TxnRead, history.TxnFinal:
			if op.Done.Type == history.OK {
				recs = op.Done.Records
			}
		}
		for _, rec := range recs {
			r.stat("values", 1)
			tp := rec.TP()
			if w, ok := writtenTo[rec.Value]; !ok || w != tp {
				d := tpDetail(tp, "value written by no transaction to this partition")
				d.Value, d.Offsets, d.Events = rec.Value, []int64{rec.Offset}, []int64{op.Done.Index}
				r.add(UnexpectedValue, d)
			}
			if at[tp] == nil {
				at[tp] = map[int64]string{}
			}
			if prev, ok := at[tp][rec.Offset]; ok && prev != rec.Value {
				d := tpDetail(tp, fmt.Sprintf("offset holds %q and %q", prev, rec.Value))
				d.Offsets, d.Events = []int64{rec.Offset}, []int64{op.Done.Index}
				r.add(InconsistentOffsets, d)
			}
			at[tp][rec.Offset] = rec.Value
		}
	}
	return *r
}

func sortTPs(tps []history.TP) {
	sort.Slice(tps, func(i, j int) bool { return tps[i].Less(tps[j]) })
}
