package records

import (
	"encoding/binary"
	"fmt"
)

// The v2 record batch, Kafka's unit of produce, fetch and storage, and so
// Floe's on-disk unit (one batch per Raft data entry). All integers are big
// endian. The CRC covers bytes 21 to the end, so the broker can rewrite
// baseOffset and partitionLeaderEpoch in place without recomputing it.
//
//	offset  field                 type    notes
//	 0      baseOffset            int64   client sends 0; the leader sets it
//	 8      batchLength           int32   bytes after this field: total - 12
//	12      partitionLeaderEpoch  int32   the leader sets it (Raft term)
//	16      magic                 int8    always 2
//	17      crc                   uint32  CRC-32C (Castagnoli) of bytes 21..end
//	21      attributes            int16   see below
//	23      lastOffsetDelta       int32   offset delta of the last record
//	27      baseTimestamp         int64   ms; record timestamps are deltas from it
//	35      maxTimestamp          int64   ms; max record timestamp, or the
//	                                      log-append time when bit 3 is set
//	43      producerId            int64   -1 = none
//	51      producerEpoch         int16   -1 = none
//	53      baseSequence          int32   record i has sequence base+i; -1 = none
//	57      recordCount           int32
//	61      records...                    one blob, compressed when codec != 0
//
//	attributes: bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd),
//	            bit 3 timestamp type (1 = log-append time),
//	            bit 4 transactional, bit 5 control,
//	            bit 6 delete horizon set (written by compaction only).
//
// Each record (uncompressed form; varints are zigzag, as in protobuf):
//
//	length          varint  bytes after this field
//	attributes      int8    unused, 0
//	timestampDelta  varlong from baseTimestamp
//	offsetDelta     varint  from baseOffset; record i has delta i when produced
//	keyLength       varint  -1 = null key
//	key             bytes
//	valueLength     varint  -1 = null value
//	value           bytes
//	headerCount     varint
//	headers         headerCount x (keyLength varint >= 0, key, valueLength
//	                varint with -1 = null, value)

// Byte offsets of the header fields.
const (
	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// HeaderBytes is the size of the batch header; records start here.
	HeaderBytes = 61
	// lengthFieldEnd is where the bytes counted by batchLength begin.
	lengthFieldEnd = 12
	// minBatchLength is the batchLength of a batch with no records.
	minBatchLength = HeaderBytes - lengthFieldEnd
)

// Magic is the only batch format version Floe accepts.
const Magic = 2

// Attribute bits.
const (
	attrCodecMask     = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

// NoProducerID, NoProducerEpoch and NoSequence mark a batch written without
// an idempotent or transactional producer.
const (
	NoProducerID    = -1
	NoProducerEpoch = -1
	NoSequence      = -1
)

// NoTimestamp is Kafka's "no timestamp" value.
const NoTimestamp = -1

// Header is the fixed 61-byte header of a v2 record batch, decoded.
type Header struct {
	BaseOffset           int64
	BatchLength          int32 // bytes after the BatchLength field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// Codec is the compression codec from the attributes. It may be above
// CodecZstd in a corrupt batch: check Codec.Valid.
func (h Header) Codec() Codec { return Codec(h.Attributes & attrCodecMask) }

// IsTransactional reports whether the batch belongs to a transaction.
func (h Header) IsTransactional() bool { return h.Attributes&attrTransactional != 0 }

// IsControl reports whether the batch holds control records (transaction
// markers). Only the broker writes control batches.
func (h Header) IsControl() bool { return h.Attributes&attrControl != 0 }

// HasLogAppendTime reports whether MaxTimestamp is the broker's append time
// rather than the producer's create time.
func (h Header) HasLogAppendTime() bool { return h.Attributes&attrLogAppendTime != 0 }

// HasProducerID reports whether the batch carries a producer ID (idempotent
// or transactional producer), by Kafka's rule: any ID above -1.
func (h Header) HasProducerID() bool { return h.ProducerID > NoProducerID }

// Size is the total size of the batch in bytes, header included.
func (h Header) Size() int { return int(h.BatchLength) + lengthFieldEnd }

// LastOffset is the offset of the batch's last record.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset following the batch: where the next batch starts.
func (h Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Timestamp is the timestamp (ms) of record r of this batch: the broker's
// append time for the whole batch when it has one, else the record's own.
func (h Header) Timestamp(r Record) int64 {
	if h.HasLogAppendTime() {
		return h.MaxTimestamp
	}
	return h.BaseTimestamp + r.TimestampDelta
}

// ParseHeader decodes the header at the start of b. It checks only what the
// header itself can show: enough bytes for it, magic 2, and a batchLength no
// smaller than an empty batch. b may hold just the header (a reader deciding
// how much more to read); Verify, Split and Validate check whole batches.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	err := h.parse(b)
	return h, err
}

// parse decodes the header at the start of b into h, with ParseHeader's
// checks. Filling h in place keeps ParseBatch, on the log's append path,
// free of copies of the header.
func (h *Header) parse(b []byte) error {
	if len(b) < HeaderBytes {
		return corrupt(ErrTruncated, fmt.Sprintf("%d bytes, a batch header needs %d", len(b), HeaderBytes))
	}
	be := binary.BigEndian
	*h = Header{
		BaseOffset:           int64(be.Uint64(b[offBaseOffset:])),
		BatchLength:          int32(be.Uint32(b[offBatchLength:])),
		PartitionLeaderEpoch: int32(be.Uint32(b[offLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  be.Uint32(b[offCRC:]),
		Attributes:           int16(be.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(be.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:        int64(be.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:         int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(be.Uint32(b[offBaseSequence:])),
		RecordCount:          int32(be.Uint32(b[offRecordCount:])),
	}
	if h.Magic != Magic {
		return corrupt(ErrMagic, fmt.Sprintf("magic %d", h.Magic))
	}
	if h.BatchLength < minBatchLength {
		return corrupt(ErrBatchLength, fmt.Sprintf("batchLength %d is below the minimum %d", h.BatchLength, minBatchLength))
	}
	return nil
}

// Verify checks that b is exactly one well-formed batch whose CRC matches.
// It does not look inside the records: it is the check for batches that
// were validated once already (read back from disk, replicated from a peer).
func Verify(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Size() != len(b) {
		return h, corrupt(ErrBatchLength, fmt.Sprintf("batchLength %d says %d bytes, have %d", h.BatchLength, h.Size(), len(b)))
	}
	if got := checksum(b); got != h.CRC {
		return h, corrupt(ErrCRC, fmt.Sprintf("stored crc %#08x, computed %#08x", h.CRC, got))
	}
	return h, nil
}

// Split cuts b, a concatenation of batches (a produce partition's Records,
// a log segment's bytes), into one sub-slice per batch. Every batch must be
// complete: a partial batch or trailing bytes shorter than a header make it
// fail, and nothing is returned. Empty input gives no batches and no error.
// The sub-slices alias b; their capacity ends at their batch, so appending to
// one never overwrites the next. Split checks framing only, not CRCs.
func Split(b []byte) ([][]byte, error) {
	var out [][]byte
	for at := 0; at < len(b); {
		h, err := ParseHeader(b[at:])
		if err != nil {
			return nil, atBatch(err, len(out))
		}
		end := at + h.Size()
		if end > len(b) {
			return nil, atBatch(corrupt(ErrTruncated, fmt.Sprintf("batch claims %d bytes, %d remain", h.Size(), len(b)-at)), len(out))
		}
		out = append(out, b[at:end:end])
		at = end
	}
	return out, nil
}

// SetBaseOffset writes the batch's base offset in place. The CRC does not
// cover it, so the batch stays valid.
func SetBaseOffset(b []byte, baseOffset int64) error {
	if len(b) < HeaderBytes {
		return corrupt(ErrTruncated, "batch shorter than its header")
	}
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(baseOffset))
	return nil
}

// SetPartitionLeaderEpoch writes the leader epoch in place. The CRC does not
// cover it, so the batch stays valid.
func SetPartitionLeaderEpoch(b []byte, epoch int32) error {
	if len(b) < HeaderBytes {
		return corrupt(ErrTruncated, "batch shorter than its header")
	}
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
	return nil
}

// SetLogAppendTime marks the batch as using log-append time: it sets
// attributes bit 3, writes ts (ms) as maxTimestamp, and recomputes the CRC.
// b must be one whole batch.
func SetLogAppendTime(b []byte, ts int64) error {
	h, err := ParseBatch(b)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(h.Attributes|attrLogAppendTime))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[offCRC:], checksum(b))
	return nil
}

// SetMaxTimestamp writes maxTimestamp and recomputes the CRC, leaving the
// timestamp type alone. Kafka corrects a producer's maxTimestamp to the
// maximum record timestamp this way (Summary.MaxTimestamp has it); b must
// be one whole batch.
func SetMaxTimestamp(b []byte, ts int64) error {
	if _, err := ParseBatch(b); err != nil {
		return err
	}
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[offCRC:], checksum(b))
	return nil
}

// ParseBatch decodes the header of b and checks that b is exactly that one
// batch. It checks framing only, not the CRC or the records: it is what the
// log checks of every batch it appends (validated before) or reads back.
func ParseBatch(b []byte) (h Header, err error) {
	if err = h.parse(b); err == nil && h.Size() != len(b) {
		err = corrupt(ErrBatchLength, fmt.Sprintf("batchLength %d says %d bytes, have %d", h.BatchLength, h.Size(), len(b)))
	}
	return h, err
}
