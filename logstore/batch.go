package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Minimal Kafka v2 record batch helpers: what the log needs to validate an
// appended batch, to find a record's timestamp, and for the cleaner to drop
// records. The broker's full codec lives in node; logstore must not import
// it, so the few helpers are duplicated here on purpose.
//
//	 0  baseOffset            int64
//	 8  batchLength           int32   bytes after this field
//	12  partitionLeaderEpoch  int32
//	16  magic                 int8    2
//	17  crc                   uint32  CRC-32C of bytes 21..end
//	21  attributes            int16   bits 0-2 codec, 3 log-append-time,
//	                                  4 transactional, 5 control
//	23  lastOffsetDelta       int32
//	27  baseTimestamp         int64
//	35  maxTimestamp          int64
//	43  producerId            int64
//	51  producerEpoch         int16
//	53  baseSequence          int32
//	57  recordCount           int32
//	61  records (compressed as one blob when codec != 0)
//
// Every record (varints are zigzag, as encoding/binary's Varint):
//
//	length varint, attributes int8, timestampDelta varint, offsetDelta varint,
//	keyLength varint (-1 = null), key, valueLength varint (-1 = null), value,
//	headerCount varint, headers...

const (
	batchHeaderBytes = 61

	attrCodecMask     = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

var errBatch = errors.New("logstore: malformed record batch")

// batchHeader is the fixed part of a v2 record batch.
type batchHeader struct {
	baseOffset      int64
	batchLength     int32
	magic           int8
	crc             uint32
	attributes      int16
	lastOffsetDelta int32
	baseTimestamp   int64
	maxTimestamp    int64
	producerID      int64
	recordCount     int32
}

// parseBatchHeader checks the framing of a whole batch b (not its CRC) and
// returns its header.
func parseBatchHeader(b []byte) (batchHeader, error) {
	if len(b) < batchHeaderBytes {
		return batchHeader{}, fmt.Errorf("%w: %d bytes", errBatch, len(b))
	}
	be := binary.BigEndian
	h := batchHeader{
		baseOffset:      int64(be.Uint64(b[0:])),
		batchLength:     int32(be.Uint32(b[8:])),
		magic:           int8(b[16]),
		crc:             be.Uint32(b[17:]),
		attributes:      int16(be.Uint16(b[21:])),
		lastOffsetDelta: int32(be.Uint32(b[23:])),
		baseTimestamp:   int64(be.Uint64(b[27:])),
		maxTimestamp:    int64(be.Uint64(b[35:])),
		producerID:      int64(be.Uint64(b[43:])),
		recordCount:     int32(be.Uint32(b[57:])),
	}
	switch {
	case h.magic != 2:
		return h, fmt.Errorf("%w: magic %d", errBatch, h.magic)
	case int(h.batchLength) != len(b)-12:
		return h, fmt.Errorf("%w: length field %d, have %d bytes", errBatch, h.batchLength, len(b)-12)
	case h.lastOffsetDelta < 0 || h.recordCount < 0:
		return h, fmt.Errorf("%w: lastOffsetDelta %d recordCount %d", errBatch, h.lastOffsetDelta, h.recordCount)
	}
	return h, nil
}

func (h batchHeader) codec() int { return int(h.attributes & attrCodecMask) }

// batchCRC computes a batch's CRC-32C (bytes 21..end).
func batchCRC(b []byte) uint32 { return crc32.Checksum(b[21:], castagnoli) }

// record is one decoded record. key or value nil means null. headers is the
// raw encoding of the header count and headers, kept as is.
type record struct {
	attributes     int8
	timestampDelta int64
	offsetDelta    int32
	key, value     []byte
	headers        []byte
}

// batchRecords decompresses and decodes every record of batch b.
func batchRecords(b []byte, h batchHeader) ([]record, error) {
	raw, err := decompress(h.codec(), b[batchHeaderBytes:])
	if err != nil {
		return nil, err
	}
	recs := make([]record, 0, max(0, min(int(h.recordCount), len(raw))))
	for i := 0; i < int(h.recordCount); i++ {
		var r record
		if r, raw, err = decodeRecord(raw); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

func decodeRecord(b []byte) (record, []byte, error) {
	length, n := binary.Varint(b)
	if n <= 0 || length < 0 || int64(len(b)-n) < length {
		return record{}, nil, fmt.Errorf("%w: record length", errBatch)
	}
	body, rest := b[n:n+int(length)], b[n+int(length):]
	d := varintReader{b: body}
	var r record
	r.attributes = int8(d.byte())
	r.timestampDelta = d.varint()
	r.offsetDelta = int32(d.varint())
	r.key = d.bytes()
	r.value = d.bytes()
	r.headers = d.b
	if d.bad {
		return record{}, nil, fmt.Errorf("%w: record fields", errBatch)
	}
	return r, rest, nil
}

type varintReader struct {
	b   []byte
	bad bool
}

func (d *varintReader) byte() byte {
	if len(d.b) < 1 {
		d.bad = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *varintReader) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes reads a length-prefixed field; length -1 is null (nil).
func (d *varintReader) bytes() []byte {
	n := d.varint()
	if d.bad || n < 0 {
		return nil
	}
	if int64(len(d.b)) < n {
		d.bad = true
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	if v == nil {
		v = []byte{}
	}
	return v
}

func appendRecord(dst []byte, r record) []byte {
	var body []byte
	body = append(body, byte(r.attributes))
	body = binary.AppendVarint(body, r.timestampDelta)
	body = binary.AppendVarint(body, int64(r.offsetDelta))
	body = appendNullableBytes(body, r.key)
	body = appendNullableBytes(body, r.value)
	if len(r.headers) == 0 {
		body = binary.AppendVarint(body, 0)
	} else {
		body = append(body, r.headers...)
	}
	dst = binary.AppendVarint(dst, int64(len(body)))
	return append(dst, body...)
}

func appendNullableBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// rebuildBatch returns batch orig with its records replaced by recs: same
// base offset, lastOffsetDelta, timestamps, producer fields and codec (so
// offsets and producer state are preserved even when recs is empty), with
// the count, length and CRC recomputed.
func rebuildBatch(orig []byte, h batchHeader, recs []record) ([]byte, error) {
	var raw []byte
	for _, r := range recs {
		raw = appendRecord(raw, r)
	}
	body := raw
	if len(recs) > 0 && h.codec() != codecNone {
		framed := len(orig) > batchHeaderBytes && h.codec() == codecSnappy &&
			len(orig[batchHeaderBytes:]) >= len(xerialMagic) &&
			string(orig[batchHeaderBytes:batchHeaderBytes+len(xerialMagic)]) == string(xerialMagic)
		var err error
		if body, err = compress(h.codec(), raw, framed); err != nil {
			return nil, err
		}
	}
	out := make([]byte, batchHeaderBytes, batchHeaderBytes+len(body))
	copy(out, orig[:batchHeaderBytes])
	out = append(out, body...)
	be := binary.BigEndian
	if len(recs) == 0 {
		// Like Kafka's cleaner, an emptied batch is written uncompressed:
		// clients cannot decompress an empty blob.
		be.PutUint16(out[21:], be.Uint16(out[21:])&^attrCodecMask)
	}
	be.PutUint32(out[8:], uint32(len(out)-12))
	be.PutUint32(out[57:], uint32(len(recs)))
	be.PutUint32(out[17:], batchCRC(out))
	return out, nil
}

// recordTimestamp is a record's timestamp under the batch's timestamp type.
func recordTimestamp(h batchHeader, r record) int64 {
	if h.attributes&attrLogAppendTime != 0 {
		return h.maxTimestamp
	}
	return h.baseTimestamp + r.timestampDelta
}
