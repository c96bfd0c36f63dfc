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
//	version      u8 = 1
//	startOffset  varint   first readable offset (DeleteRecords, retention)
//	producers    count, then per producer (sorted by id):
//	  id varint, epoch u16, batches count, then per batch:
//	    firstSeq varint, lastSeq varint, baseOffset varint, index uvarint
const checkpointVersion = 1

// Checkpoint is the decoded form.
type Checkpoint struct {
	StartOffset int64
	Producers   *Producers
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
	ids := ps.IDs()
	w.Uvarint(uint64(len(ids)))
	for _, id := range ids {
		st, _ := ps.Get(id)
		w.Varint(id)
		w.U16(uint16(st.Epoch))
		w.Uvarint(uint64(len(st.Batches)))
		for _, b := range st.Batches {
			w.Varint(int64(b.FirstSeq))
			w.Varint(int64(b.LastSeq))
			w.Varint(b.BaseOffset)
			w.Uvarint(b.Index)
		}
	}
	return w.B
}

// DecodeCheckpoint decodes what EncodeCheckpoint wrote; empty input is the
// state of a new partition.
func DecodeCheckpoint(b []byte) (Checkpoint, error) {
	c := Checkpoint{Producers: NewProducers()}
	if len(b) == 0 {
		return c, nil
	}
	r := wire.Reader{B: b}
	if v := r.U8(); v != checkpointVersion {
		return Checkpoint{}, fmt.Errorf("partition: checkpoint version %d unknown", v)
	}
	c.StartOffset = r.Varint()
	n := r.Count(4)
	for i := 0; i < n && r.Err() == nil; i++ {
		id := r.Varint()
		epoch := int16(r.U16())
		nb := r.Count(4)
		for j := 0; j < nb && r.Err() == nil; j++ {
			sb := SeqBatch{FirstSeq: int32(r.Varint()), LastSeq: int32(r.Varint()), BaseOffset: r.Varint(), Index: r.Uvarint()}
			c.Producers.Record(id, epoch, sb)
		}
	}
	if err := r.Done(); err != nil {
		return Checkpoint{}, fmt.Errorf("partition: checkpoint: %w", err)
	}
	return c, nil
}
