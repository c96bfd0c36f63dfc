package partition

import (
	"math"
	"sort"
)

// Idempotent producer state: what a partition remembers of each producer id
// so that a retried batch is answered with its original offset instead of
// being appended twice (kafka-notes.md, "Idempotent producer, broker side").
//
// The table is a pure function of the log: every replica applies the same
// batches in the same order and reaches the same table, so whichever replica
// becomes leader makes the same decisions.

// batchesKept is how many recent batches per producer Kafka remembers; clients
// keep at most five requests in flight, so a retry is always among them.
const batchesKept = 5

// SeqBatch is one remembered batch of a producer.
type SeqBatch struct {
	FirstSeq   int32
	LastSeq    int32
	BaseOffset int64
	// Index and Term locate the Raft entry holding the batch: a duplicate
	// of a batch not yet committed must wait for that entry to commit. Term
	// is known only on the leader that appended it (0 after a restart,
	// when the entry is committed anyway).
	Index uint64
	Term  uint64
}

// ProducerState is one producer id's state on one partition.
//
// Invariant: Batches is ordered oldest first, holds at most batchesKept
// batches, all of epoch Epoch, each FirstSeq following the previous LastSeq.
type ProducerState struct {
	Epoch   int16
	Batches []SeqBatch
}

// Producers maps producer id to state.
type Producers struct {
	byID map[int64]*ProducerState
}

// NewProducers returns an empty table.
func NewProducers() *Producers { return &Producers{byID: map[int64]*ProducerState{}} }

// Verdict is the idempotence check's answer for an incoming batch.
type Verdict uint8

const (
	// Accept: append the batch.
	Accept Verdict = iota
	// Duplicate: the batch was already appended; answer with Original.
	Duplicate
	// OutOfOrder: the sequence does not follow (OUT_OF_ORDER_SEQUENCE_NUMBER).
	OutOfOrder
	// Fenced: the epoch is older than the one stored (INVALID_PRODUCER_EPOCH).
	Fenced
)

// Check decides what to do with a batch from producer pid at epoch with
// sequences [firstSeq, lastSeq]. It does not change the table.
func (t *Producers) Check(pid int64, epoch int16, firstSeq, lastSeq int32) (Verdict, SeqBatch) {
	st, ok := t.byID[pid]
	if !ok {
		if firstSeq != 0 {
			return OutOfOrder, SeqBatch{}
		}
		return Accept, SeqBatch{}
	}
	switch {
	case epoch < st.Epoch:
		return Fenced, SeqBatch{}
	case epoch > st.Epoch:
		if firstSeq != 0 {
			return OutOfOrder, SeqBatch{}
		}
		return Accept, SeqBatch{}
	}
	for _, b := range st.Batches {
		if b.FirstSeq == firstSeq && b.LastSeq == lastSeq {
			return Duplicate, b
		}
	}
	if len(st.Batches) == 0 {
		return Accept, SeqBatch{}
	}
	last := st.Batches[len(st.Batches)-1].LastSeq
	if firstSeq != nextSeq(last) {
		return OutOfOrder, SeqBatch{}
	}
	return Accept, SeqBatch{}
}

// nextSeq is the sequence after s; sequences wrap from MaxInt32 to 0.
func nextSeq(s int32) int32 {
	if s == math.MaxInt32 {
		return 0
	}
	return s + 1
}

// LastSeq returns the sequence of a batch's last record: sequences wrap.
func LastSeq(firstSeq int32, records int32) int32 {
	last := int64(firstSeq) + int64(records) - 1
	if last > math.MaxInt32 {
		last -= int64(math.MaxInt32) + 1
	}
	return int32(last)
}

// Record applies an appended batch to the table. It is called for every
// batch with a producer id, on every replica, in log order, whether or not
// Check was asked (followers never ask).
func (t *Producers) Record(pid int64, epoch int16, b SeqBatch) {
	st, ok := t.byID[pid]
	if !ok || epoch != st.Epoch {
		// A new producer or a new epoch starts a fresh history. A stale
		// epoch cannot reach the log through a leader, but a log written
		// by an older version might hold one: the newest entry wins.
		st = &ProducerState{Epoch: epoch}
		t.byID[pid] = st
	}
	st.Batches = append(st.Batches, b)
	if len(st.Batches) > batchesKept {
		st.Batches = append(st.Batches[:0], st.Batches[len(st.Batches)-batchesKept:]...)
	}
}

// Get returns a copy of a producer's state.
func (t *Producers) Get(pid int64) (ProducerState, bool) {
	st, ok := t.byID[pid]
	if !ok {
		return ProducerState{}, false
	}
	return ProducerState{Epoch: st.Epoch, Batches: append([]SeqBatch(nil), st.Batches...)}, true
}

// Len returns the number of producers.
func (t *Producers) Len() int { return len(t.byID) }

// IDs returns the producer ids, sorted.
func (t *Producers) IDs() []int64 {
	ids := make([]int64, 0, len(t.byID))
	for id := range t.byID { //floe:unordered keys are sorted below
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Clone returns a deep copy (a leader's pending view starts as a copy of the
// applied table).
func (t *Producers) Clone() *Producers {
	c := NewProducers()
	for _, id := range t.IDs() {
		st, _ := t.Get(id)
		c.byID[id] = &st
	}
	return c
}
