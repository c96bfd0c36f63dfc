package partition

import (
	"math"
	"sort"

	"github.com/floe-broker/floe/internal/plant"
)

// Idempotent producer state: what a partition remembers of each producer id
// so that a retried batch is answered with its original offset instead of
// being appended twice (docs/kafka-notes.md, "Idempotent producer, broker side").
//
// The table is a pure function of the log: every replica applies the same
// batches in the same order and reaches the same table, so whichever replica
// becomes leader makes the same decisions.
//
// Expiry (Kafka's producer.id.expiration.ms, default one day): a producer
// whose last batch is that much older than the log's time is forgotten.
// The log's time is the largest batch timestamp applied so far (never a
// clock: a replay, on any replica, at any time, expires the same producers
// at the same entry), and a producer's last time is the log's time when
// its last batch was applied. The setting itself reaches the table through
// the log too (EntryProducerExpiry). A producer the table does not know —
// never seen, or expired — may start at any sequence, as in Kafka 2.5+
// (ProducerAppendInfo.checkSequence: "accept writes with any sequence
// number"): an idle client coming back is served, not refused.

// batchesKept is how many recent batches per producer Kafka remembers; clients
// keep at most five requests in flight, so a retry is always among them.
const batchesKept = 5

// DefaultProducerIDExpirationMs is Kafka's producer.id.expiration.ms.
const DefaultProducerIDExpirationMs = 24 * 3600 * 1000

// noTime is the log's time before any batch with a timestamp was applied
// (records.NoTimestamp).
const noTime = -1

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
	// LastMs is the log's time when the producer's last batch was applied
	// (noTime if the log had no time yet).
	LastMs int64
	// CoordEpoch is the largest coordinator epoch of the producer's
	// markers here (0: none yet; coordinator epochs are Raft terms, from
	// 1). It outlives epoch bumps, as Kafka's does: a marker from an
	// older coordinator is refused (AppendMarker), or a deposed one
	// resending the previous transaction's abort would close the
	// producer's next transaction as aborted.
	CoordEpoch int32
}

// producerEntry is a table row, linked into the expiry order.
type producerEntry struct {
	id         int64
	st         ProducerState
	prev, next *producerEntry
}

// Producers maps producer id to state.
//
// Invariants: the list from oldest to newest holds exactly the entries of
// byID, in non-decreasing LastMs order (a producer moves to the newest end
// when it writes, and the log's time never goes back); no entry is expired
// (LastMs <= nowMs-expirationMs) once nowMs is known; an entry has LastMs
// noTime only while nowMs is noTime.
type Producers struct {
	byID           map[int64]*producerEntry
	oldest, newest *producerEntry

	nowMs        int64 // the log's time: the largest batch timestamp applied
	expirationMs int64 // producer.id.expiration.ms as the log last set it
}

// NewProducers returns an empty table with Kafka's default expiry.
func NewProducers() *Producers {
	return &Producers{byID: map[int64]*producerEntry{}, nowMs: noTime, expirationMs: DefaultProducerIDExpirationMs}
}

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
// sequences [firstSeq, lastSeq] and max timestamp tsMs. It does not change
// the table. A producer the batch's own timestamp would expire is judged
// as unknown, which is what Observe then Record do with it.
func (t *Producers) Check(pid int64, epoch int16, firstSeq, lastSeq int32, tsMs int64) (Verdict, SeqBatch) {
	e, ok := t.byID[pid]
	if !ok || t.expiredAt(e.st.LastMs, max(t.nowMs, tsMs)) {
		return Accept, SeqBatch{}
	}
	st := &e.st
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

// expiredAt reports whether a producer last seen at lastMs is expired when
// the log's time is nowMs (Kafka: now - last >= producer.id.expiration.ms).
// Written without the subtraction that could overflow on wild timestamps.
func (t *Producers) expiredAt(lastMs, nowMs int64) bool {
	if nowMs < 0 || t.nowMs < 0 {
		// The clock starts now: producers recorded before it count from
		// here (see Observe).
		return false
	}
	return lastMs <= nowMs-t.expirationMs
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

// Observe moves the log's time to a batch's max timestamp, if that is
// later, and forgets the producers that are then expired. It is called for
// every applied batch, with a producer id or not, before Record.
func (t *Producers) Observe(tsMs int64) {
	if tsMs <= t.nowMs || tsMs < 0 {
		return
	}
	if t.nowMs < 0 {
		// The first time the log has: producers recorded without one (a
		// log of untimed batches, or a version-1 checkpoint) start here.
		for e := t.oldest; e != nil; e = e.next {
			e.st.LastMs = tsMs
		}
	}
	t.nowMs = tsMs
	t.expire()
}

// SetExpiration applies a producer.id.expiration.ms the log carries
// (EntryProducerExpiry); ms < 1 is ignored, as Kafka's minimum is 1.
func (t *Producers) SetExpiration(ms int64) {
	if ms < 1 {
		return
	}
	t.expirationMs = ms
	t.expire()
}

// Expiration returns the producer.id.expiration.ms the table applies.
func (t *Producers) Expiration() int64 { return t.expirationMs }

// NowMs returns the log's time (-1 before any timestamped batch).
func (t *Producers) NowMs() int64 { return t.nowMs }

// expire drops expired producers, oldest first: the list order makes it
// cost only the producers it drops.
func (t *Producers) expire() {
	for e := t.oldest; e != nil && t.expiredAt(e.st.LastMs, t.nowMs); e = t.oldest {
		t.unlink(e)
		delete(t.byID, e.id)
	}
}

// Record applies an appended batch to the table. It is called for every
// batch with a producer id, on every replica, in log order, whether or not
// Check was asked (followers never ask), after Observe.
func (t *Producers) Record(pid int64, epoch int16, b SeqBatch) {
	e, ok := t.byID[pid]
	switch {
	case !ok:
		e = &producerEntry{id: pid, st: ProducerState{Epoch: epoch}}
		t.byID[pid] = e
	case epoch != e.st.Epoch:
		// A new epoch starts a fresh history. A stale epoch cannot reach
		// the log through a leader, but a log written by an older version
		// might hold one: the newest entry wins.
		t.unlink(e)
		e.st = ProducerState{Epoch: epoch, CoordEpoch: e.st.CoordEpoch}
	default:
		t.unlink(e)
	}
	st := &e.st
	st.Batches = append(st.Batches, b)
	kept := batchesKept
	if plant.Enabled(plant.IdempotenceWindowShrunk) {
		kept = 1
	}
	if len(st.Batches) > kept {
		st.Batches = append(st.Batches[:0], st.Batches[len(st.Batches)-kept:]...)
	}
	st.LastMs = t.nowMs
	t.pushNewest(e)
}

func (t *Producers) pushNewest(e *producerEntry) {
	e.prev, e.next = t.newest, nil
	if t.newest != nil {
		t.newest.next = e
	} else {
		t.oldest = e
	}
	t.newest = e
}

func (t *Producers) unlink(e *producerEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		t.oldest = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		t.newest = e.prev
	}
	e.prev, e.next = nil, nil
}

// Get returns a copy of a producer's state.
func (t *Producers) Get(pid int64) (ProducerState, bool) {
	e, ok := t.byID[pid]
	if !ok {
		return ProducerState{}, false
	}
	return copyState(e.st), true
}

func copyState(st ProducerState) ProducerState {
	st.Batches = append([]SeqBatch(nil), st.Batches...)
	return st
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
	c.nowMs, c.expirationMs = t.nowMs, t.expirationMs
	for e := t.oldest; e != nil; e = e.next {
		ce := &producerEntry{id: e.id, st: copyState(e.st)}
		c.byID[e.id] = ce
		c.pushNewest(ce)
	}
	return c
}

// restoreTable builds a table from decoded parts (a checkpoint): states by
// id, put in expiry order (by LastMs; ties by id, an order that no
// decision depends on, since tied producers expire together).
func restoreTable(nowMs, expirationMs int64, ids []int64, states []ProducerState) *Producers {
	t := NewProducers()
	t.nowMs, t.expirationMs = nowMs, expirationMs
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return states[order[a]].LastMs < states[order[b]].LastMs })
	for _, i := range order {
		e := &producerEntry{id: ids[i], st: states[i]}
		t.byID[e.id] = e
		t.pushNewest(e)
	}
	t.expire()
	return t
}

// Mark applies a control batch (a transaction marker, of coordinator epoch
// coordEpoch; 0 for a broker's own transactional write, which has none) of
// producer pid at epoch: markers carry no sequence, but one at a newer
// epoch (a fencing abort) raises the producer's epoch here, so the fenced
// producer's later batches are refused, and the next epoch starts a fresh
// history. The coordinator epoch only goes up.
func (t *Producers) Mark(pid int64, epoch int16, coordEpoch int32) {
	e, ok := t.byID[pid]
	switch {
	case !ok:
		e = &producerEntry{id: pid, st: ProducerState{Epoch: epoch}}
		t.byID[pid] = e
	case epoch > e.st.Epoch:
		t.unlink(e)
		e.st = ProducerState{Epoch: epoch, CoordEpoch: e.st.CoordEpoch}
	default:
		t.unlink(e)
	}
	e.st.CoordEpoch = max(e.st.CoordEpoch, coordEpoch)
	e.st.LastMs = t.nowMs
	t.pushNewest(e)
}
