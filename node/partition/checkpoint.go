package partition

import (
	"fmt"

	"github.com/floe-broker/floe/internal/wire"
)

// A checkpoint is the partition state at the log's snapshot point: what a
// follower needs on top of the entries after that point. It rides in
// replica.SnapshotData.App.
//
// Layout (internal/wire encoding):
//
//	version      u8 = 4
//	startOffset  varint   first readable offset (DeleteRecords, retention)
//	nowMs        varint   the log's time (Producers), -1 before any
//	expiration   varint   producer.id.expiration.ms as the log set it
//	producers    count, then per producer (ids strictly increasing):
//	  id varint, epoch u16, lastMs varint, coordEpoch varint (the
//	  coordinator epoch of its last marker, 0 for none), batches count,
//	  then per batch:
//	    firstSeq varint, lastSeq varint, baseOffset varint, index uvarint
//	open txns    count, then per transaction (producer ids strictly
//	             increasing): producer id varint, first offset varint,
//	             epoch u16
//	aborted txns count, then per transaction (markers in log order):
//	             producer id varint, first offset varint, marker offset varint
//
// Version 3 lacks the coordinator epochs (they decode as 0: no marker
// seen, so the next marker of any coordinator is taken). Version 2 lacks
// the transactions (it decodes with none open or aborted).
// Version 1 (before producer expiry) lacks nowMs, expiration and lastMs;
// it decodes with no log time yet and the default expiry, so its producers
// start counting at the first timestamp the log applies.
const checkpointVersion = 4

// Checkpoint is the decoded form.
type Checkpoint struct {
	StartOffset int64
	Producers   *Producers
	Txns        *Txns
	// withoutCoordEpochs writes every producer's coordinator epoch as 0
	// (ReplicatedState of a compacted partition: see there).
	withoutCoordEpochs bool
}

// EncodeCheckpoint encodes c.
func EncodeCheckpoint(c Checkpoint) []byte {
	var w wire.Writer
	w.U8(checkpointVersion)
	w.Varint(c.StartOffset)
	ps := c.Producers
	if ps == nil {
		ps = NewProducers()
	}
	w.Varint(ps.nowMs)
	w.Varint(ps.expirationMs)
	ids := ps.IDs()
	w.Uvarint(uint64(len(ids)))
	for _, id := range ids {
		st := ps.byID[id].st
		w.Varint(id)
		w.U16(uint16(st.Epoch))
		w.Varint(st.LastMs)
		if c.withoutCoordEpochs {
			w.Varint(0)
		} else {
			w.Varint(int64(st.CoordEpoch))
		}
		w.Uvarint(uint64(len(st.Batches)))
		for _, b := range st.Batches {
			w.Varint(int64(b.FirstSeq))
			w.Varint(int64(b.LastSeq))
			w.Varint(b.BaseOffset)
			w.Uvarint(b.Index)
		}
	}
	tx := c.Txns
	if tx == nil {
		tx = NewTxns()
	}
	open := tx.openIDs()
	w.Uvarint(uint64(len(open)))
	for _, id := range open {
		o := tx.open[id]
		w.Varint(id)
		w.Varint(o.FirstOffset)
		w.U16(uint16(o.Epoch))
	}
	w.Uvarint(uint64(len(tx.aborted)))
	for _, a := range tx.aborted {
		w.Varint(a.ProducerID)
		w.Varint(a.FirstOffset)
		w.Varint(a.LastOffset)
	}
	return w.B
}

// DecodeCheckpoint decodes what EncodeCheckpoint wrote (or its version 1);
// empty input is the state of a new partition.
func DecodeCheckpoint(b []byte) (Checkpoint, error) {
	c := Checkpoint{Producers: NewProducers(), Txns: NewTxns()}
	if len(b) == 0 {
		return c, nil
	}
	r := wire.Reader{B: b}
	v := r.U8()
	if v < 1 || v > checkpointVersion {
		return Checkpoint{}, fmt.Errorf("partition: checkpoint version %d unknown", v)
	}
	c.StartOffset = r.Varint()
	nowMs, expirationMs := int64(noTime), int64(DefaultProducerIDExpirationMs)
	if v >= 2 {
		nowMs, expirationMs = r.Varint(), r.Varint()
	}
	if nowMs < noTime {
		return Checkpoint{}, fmt.Errorf("partition: checkpoint: log time %d", nowMs)
	}
	n := r.Count(4)
	ids := make([]int64, 0, n)
	states := make([]ProducerState, 0, n)
	for i := 0; i < n && r.Err() == nil; i++ {
		id := r.Varint()
		st := ProducerState{Epoch: int16(r.U16()), LastMs: noTime}
		if v >= 2 {
			st.LastMs = r.Varint()
		}
		if v >= 4 {
			st.CoordEpoch = int32(r.Varint())
		}
		nb := r.Count(4)
		for j := 0; j < nb && r.Err() == nil; j++ {
			st.Batches = append(st.Batches, SeqBatch{FirstSeq: int32(r.Varint()), LastSeq: int32(r.Varint()), BaseOffset: r.Varint(), Index: r.Uvarint()})
		}
		if len(ids) > 0 && id <= ids[len(ids)-1] {
			return Checkpoint{}, fmt.Errorf("partition: checkpoint: producer id %d after %d", id, ids[len(ids)-1])
		}
		if st.LastMs > nowMs || (nowMs >= 0) != (st.LastMs >= 0) {
			// (The table's invariants: a producer's time is the log's time
			// when it wrote, and none once the log has one.)
			return Checkpoint{}, fmt.Errorf("partition: checkpoint: producer %d last wrote at %d, log time %d", id, st.LastMs, nowMs)
		}
		if len(st.Batches) > batchesKept {
			st.Batches = st.Batches[len(st.Batches)-batchesKept:]
		}
		ids, states = append(ids, id), append(states, st)
	}
	if v >= 3 {
		tx, err := decodeTxns(&r)
		if err != nil {
			return Checkpoint{}, err
		}
		c.Txns = tx
	}
	if err := r.Done(); err != nil {
		return Checkpoint{}, fmt.Errorf("partition: checkpoint: %w", err)
	}
	if expirationMs < 1 {
		return Checkpoint{}, fmt.Errorf("partition: checkpoint: producer expiry %d ms", expirationMs)
	}
	c.Producers = restoreTable(nowMs, expirationMs, ids, states)
	return c, nil
}

// decodeTxns reads the transactions of a version 3 or 4 checkpoint.
func decodeTxns(r *wire.Reader) (*Txns, error) {
	tx := NewTxns()
	n := r.Count(3)
	prev := int64(-1)
	for i := 0; i < n && r.Err() == nil; i++ {
		id, first, epoch := r.Varint(), r.Varint(), int16(r.U16())
		if id <= prev || first < 0 {
			return nil, fmt.Errorf("partition: checkpoint: open transaction of %d at %d after %d", id, first, prev)
		}
		prev = id
		tx.open[id] = OpenTxn{FirstOffset: first, Epoch: epoch}
	}
	n = r.Count(3)
	for i := 0; i < n && r.Err() == nil; i++ {
		a := AbortedTxn{ProducerID: r.Varint(), FirstOffset: r.Varint(), LastOffset: r.Varint()}
		if a.FirstOffset < 0 || a.LastOffset < a.FirstOffset ||
			len(tx.aborted) > 0 && a.LastOffset <= tx.aborted[len(tx.aborted)-1].LastOffset {
			return nil, fmt.Errorf("partition: checkpoint: aborted transaction %+v out of order", a)
		}
		tx.aborted = append(tx.aborted, a)
	}
	return tx, nil
}
