package sim

// The transactional workload's checker lives in jepsen/check (txn.go and
// txnoffsets.go), shared with the Docker suite's transactional workload:
// this file only turns the workload's records into check.Txn and the
// anomalies back.

import "github.com/floe-broker/floe/jepsen/check"

// txnAnomaly is one violation: its kind (aborted-read, lost-write, ...)
// and a description.
type txnAnomaly struct{ kind, msg string }

// txnCounts says how many transactions had each outcome.
type txnCounts struct{ committed, aborted, unknown int }

// checkTxns turns the workload's transactions into check.Txn, in the
// order they began.
func checkTxns(txns []*txnRec) []*check.Txn {
	in := make([]*check.Txn, len(txns))
	for i, t := range txns {
		outcome := check.TxnUnknown // open or unknown
		switch t.outcome {
		case txnCommitted:
			outcome = check.TxnCommitted
		case txnAborted:
			outcome = check.TxnAborted
		}
		in[i] = &check.Txn{Name: t.name, Producer: t.producer, Values: t.values, Outcome: outcome, Reads: t.reads,
			Offsets: t.offsets, CommitAsked: t.commitAsked}
		if t.offsets != nil {
			in[i].Group = txnGroup(t.producer)
		}
	}
	return in
}

// txnAnomalies checks a transactional history with check.TxnAnomalies:
// txns in the order they began, the final read_committed contents by
// partition, and the values a read_committed reader saw during the run;
// and, with check.TxnOffsetAnomalies, the transactional offsets read.
func txnAnomalies(txns []*txnRec, final map[int32][]string, readDuring map[string]bool, offsets []check.TxnOffsetRead) ([]txnAnomaly, txnCounts) {
	in := checkTxns(txns)
	as, n := check.TxnAnomalies(in, final, readDuring)
	as = append(as, check.TxnOffsetAnomalies(in, offsets)...)
	out := make([]txnAnomaly, len(as))
	for i, a := range as {
		out[i] = txnAnomaly{a.Kind, a.Msg}
	}
	return out, txnCounts{n.Committed, n.Aborted, n.Unknown}
}
