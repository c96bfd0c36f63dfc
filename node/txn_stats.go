package node

import "github.com/floe-broker/floe/node/txn"

// TxnStats are the transaction coordinators' figures on this broker, for
// metrics: counters summed over every coordinator this broker has hosted
// (a closed one's counts are kept, so they never go back), and the
// transactions open on the coordinators it hosts now.
type TxnStats struct {
	txn.Stats
	// Open counts transactions Ongoing or being decided (PrepareCommit,
	// PrepareAbort); OldestStartMs is the wall time the oldest of them
	// started, -1 when none is open.
	Open          int
	OldestStartMs int64
}

// TxnStats returns the transaction figures.
func (r *Reactor) TxnStats() TxnStats {
	st := TxnStats{Stats: r.txns.retired, OldestStartMs: -1}
	for _, g := range sortedKeys(r.txns.shards) {
		c := r.txns.shards[g].coord
		addTxnStats(&st.Stats, c.Stats())
		for _, d := range c.List([]txn.State{txn.Ongoing, txn.PrepareCommit, txn.PrepareAbort}, nil) {
			st.Open++
			if d.StartMs >= 0 && (st.OldestStartMs < 0 || d.StartMs < st.OldestStartMs) {
				st.OldestStartMs = d.StartMs
			}
		}
	}
	return st
}

func addTxnStats(to *txn.Stats, s txn.Stats) {
	to.Starts += s.Starts
	to.Commits += s.Commits
	to.AbortsByEnd += s.AbortsByEnd
	to.AbortsByTime += s.AbortsByTime
	to.AbortsByFence += s.AbortsByFence
	to.MarkerRetries += s.MarkerRetries
}
