package records

import (
	"encoding/binary"
	"fmt"
)

// Producer identifies an idempotent or transactional producer's batch.
type Producer struct {
	ID           int64
	Epoch        int16
	BaseSequence int32
}

// BuildOptions describe the batch Build makes.
type BuildOptions struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32
	Codec                Codec // must be Valid
	// BaseTimestamp is the batch's base timestamp (ms); records carry
	// deltas from it. maxTimestamp is computed from the records.
	BaseTimestamp int64
	Transactional bool
	Control       bool
	// Producer is nil for a batch without producer (ID, epoch and sequence
	// are written as -1).
	Producer *Producer
	// KeepOffsetDeltas writes each record's OffsetDelta as given (for
	// rewriting batches, where compaction leaves gaps); otherwise record i
	// gets delta i. lastOffsetDelta is the largest delta written.
	KeepOffsetDeltas bool
}

// Build makes one v2 batch of recs under o, compressed with o.Codec, with a
// correct length and CRC. Every batch it makes passes Verify. An invalid
// codec is a programming error and panics.
func Build(o BuildOptions, recs []Record) []byte {
	if !o.Codec.Valid() {
		panic(fmt.Sprintf("records: Build with invalid %v", o.Codec))
	}
	raw := make([]byte, 0, encodedRecordsSize(recs))
	lastDelta, maxTsDelta := int32(-1), int64(0)
	for i := range recs {
		r := recs[i]
		if !o.KeepOffsetDeltas {
			r.OffsetDelta = int32(i)
		}
		lastDelta = max(lastDelta, r.OffsetDelta)
		if i == 0 || r.TimestampDelta > maxTsDelta {
			maxTsDelta = r.TimestampDelta
		}
		raw = appendRecord(raw, &r)
	}
	b := make([]byte, HeaderBytes, HeaderBytes+len(raw)/2+64)
	if o.Codec == CodecNone {
		b = append(b, raw...)
	} else {
		b = compress(b, o.Codec, raw)
	}
	attrs := int16(o.Codec)
	if o.Transactional {
		attrs |= attrTransactional
	}
	if o.Control {
		attrs |= attrControl
	}
	p := Producer{ID: NoProducerID, Epoch: NoProducerEpoch, BaseSequence: NoSequence}
	if o.Producer != nil {
		p = *o.Producer
	}
	maxTs := o.BaseTimestamp + maxTsDelta
	if len(recs) == 0 {
		maxTs = NoTimestamp
	}
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(o.BaseOffset))
	be.PutUint32(b[offBatchLength:], uint32(len(b)-lengthFieldEnd))
	be.PutUint32(b[offLeaderEpoch:], uint32(o.PartitionLeaderEpoch))
	b[offMagic] = Magic
	be.PutUint16(b[offAttributes:], uint16(attrs))
	be.PutUint32(b[offLastOffsetDelta:], uint32(lastDelta))
	be.PutUint64(b[offBaseTimestamp:], uint64(o.BaseTimestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(maxTs))
	be.PutUint64(b[offProducerID:], uint64(p.ID))
	be.PutUint16(b[offProducerEpoch:], uint16(p.Epoch))
	be.PutUint32(b[offBaseSequence:], uint32(p.BaseSequence))
	be.PutUint32(b[offRecordCount:], uint32(len(recs)))
	be.PutUint32(b[offCRC:], checksum(b))
	return b
}

func encodedRecordsSize(recs []Record) int {
	n := 0
	for i := range recs {
		body := recordBodySize(&recs[i])
		n += varintSize(int64(body)) + body
	}
	return n
}

func recordBodySize(r *Record) int {
	n := 1 + varintSize(r.TimestampDelta) + varintSize(int64(r.OffsetDelta)) +
		nullableSize(r.Key) + nullableSize(r.Value) + varintSize(int64(len(r.Headers)))
	for _, h := range r.Headers {
		n += varintSize(int64(len(h.Key))) + len(h.Key) + nullableSize(h.Value)
	}
	return n
}

func appendRecord(dst []byte, r *Record) []byte {
	dst = binary.AppendVarint(dst, int64(recordBodySize(r)))
	dst = append(dst, byte(r.Attributes))
	dst = binary.AppendVarint(dst, r.TimestampDelta)
	dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
	dst = appendNullable(dst, r.Key)
	dst = appendNullable(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = binary.AppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendNullable(dst, h.Value)
	}
	return dst
}

func appendNullable(dst, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(v)))
	return append(dst, v...)
}

func nullableSize(v []byte) int {
	if v == nil {
		return varintSize(-1)
	}
	return varintSize(int64(len(v))) + len(v)
}

// varintSize is the encoded size of v as a zigzag varint.
func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
