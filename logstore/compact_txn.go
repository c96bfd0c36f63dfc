package logstore

// Transaction-aware compaction, as Kafka's log cleaner does it (see the
// comment at the top of compact.go for the rules). The partition tells the
// cleaner its last stable offset and its aborted-transaction index; the
// cleaner never needs to find a transaction's outcome in the log itself.

import (
	"sort"
	"time"

	"github.com/floe-broker/floe/node/records"
)

// TxnView is what a transaction-aware pass needs to know of the partition.
type TxnView struct {
	// StableOffset is the last stable offset: a segment holding any offset
	// at or above it is not cleaned (an open transaction's batches, and
	// everything after them, stay as they are).
	StableOffset int64
	// Aborted returns the aborted transactions overlapping offsets
	// [from, to): producer id, the offset of the transaction's first batch
	// and the offset of its abort marker. Called once when a pass starts.
	Aborted func(from, to int64) []AbortedRange
}

// AbortedRange is an aborted transaction: its producer's batches from
// FirstOffset up to (not including) the abort marker at LastOffset.
type AbortedRange struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// txnPass is a transaction-aware pass's view of transactions.
type txnPass struct {
	// abortedBy: each producer's aborted transactions, by first offset.
	abortedBy map[int64][]AbortedRange
	// live: the producers whose current transaction (since their last
	// marker, in the copy order) has a batch that held records when this
	// pass began.
	live map[int64]bool
}

func newTxnPass(v *TxnView, from, to int64) *txnPass {
	t := &txnPass{abortedBy: map[int64][]AbortedRange{}, live: map[int64]bool{}}
	if v.Aborted == nil {
		return t
	}
	for _, a := range v.Aborted(from, to) {
		t.abortedBy[a.ProducerID] = append(t.abortedBy[a.ProducerID], a)
	}
	for _, rs := range t.abortedBy { //floe:unordered each list is sorted on its own
		sort.Slice(rs, func(i, j int) bool { return rs[i].FirstOffset < rs[j].FirstOffset })
	}
	return t
}

// aborted reports whether producer pid's transactional batch at offset
// belongs to an aborted transaction. Below the last stable offset every
// other transactional batch belongs to a committed one.
func (t *txnPass) aborted(pid, offset int64) bool {
	rs := t.abortedBy[pid]
	i := sort.Search(len(rs), func(i int) bool { return rs[i].FirstOffset > offset }) - 1
	return i >= 0 && offset < rs[i].LastOffset
}

// cleanTxnBatch handles the batches only a transaction-aware pass treats
// specially: markers, and the data of aborted transactions. done is false
// for everything else (the caller filters it by key).
func (t *txnPass) cleanTxnBatch(l *Log, b []byte, now time.Time, cfg CleanConfig) (out []byte, done bool) {
	h, err := records.ParseBatch(b)
	if err != nil {
		return b, true // copied as it is
	}
	switch {
	case h.IsControl():
		live := t.live[h.ProducerID]
		delete(t.live, h.ProducerID)
		if h.RecordCount == 0 || live {
			return b, true // already removed, or its data was still there when the pass began
		}
		if h.MaxTimestamp >= now.UnixMilli()-cfg.DeleteRetentionMs {
			return b, true // younger than delete.retention.ms
		}
		out, removed, err := records.Filter(b, func(records.Record) bool { return false })
		if err != nil {
			return b, true
		}
		l.stats.Cleaner.MarkersRemoved += int64(removed)
		return out, true
	case !h.IsTransactional():
		return nil, false
	}
	if h.RecordCount > 0 {
		t.live[h.ProducerID] = true
	}
	if !t.aborted(h.ProducerID, h.BaseOffset) {
		return nil, false // committed: compacted by key
	}
	out, removed, err := records.Filter(b, func(records.Record) bool { return false })
	if err != nil || removed == 0 {
		return b, true
	}
	l.stats.Cleaner.RecordsRemoved += int64(removed)
	l.stats.Cleaner.AbortedRecordsRemoved += int64(removed)
	l.stats.Cleaner.BatchesEmptied++
	return out, true
}
