package records

import (
	"encoding/binary"

	"github.com/klauspost/compress/snappy"
)

// Filter returns batch b without the records keep rejects, and how many
// went. It is log compaction's rewrite, so the batch keeps its identity:
// base offset, lastOffsetDelta, timestamps, producer fields, leader epoch
// and codec are b's (a snappy batch keeps its framing, xerial or raw
// block, as its producer chose), so offsets and producer state do not
// change even when every record goes; recordCount, batchLength and the CRC
// are recomputed. A batch left with no records is written uncompressed, as
// Kafka's cleaner does: clients cannot decompress an empty payload. When
// keep rejects nothing, b itself is returned.
//
// b must be one whole batch whose records decode (Records' rules); it is
// not modified. The Record passed to keep is valid only during the call.
func Filter(b []byte, keep func(r Record) bool) (out []byte, removed int, err error) {
	h, err := ParseBatch(b)
	if err != nil {
		return nil, 0, err
	}
	var raw []byte
	kept := 0
	w := walker{decodedBytesMax: DefaultDecompressedBytesMax, wantHeaders: true}
	err = w.walk(b, h, func(_ int, r *Record) error {
		if keep(*r) {
			raw = appendRecord(raw, r)
			kept++
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if kept == int(h.RecordCount) {
		return b, 0, nil
	}
	codec := h.Codec()
	if kept == 0 {
		codec = CodecNone
	}
	out = make([]byte, HeaderBytes, HeaderBytes+len(raw))
	copy(out, b[:HeaderBytes])
	switch {
	case codec == CodecSnappy && !xerialFramed(b[HeaderBytes:]):
		out = append(out, snappy.Encode(nil, raw)...) // a raw block, as the producer sent
	case codec == CodecNone:
		out = append(out, raw...)
	default:
		out = compress(out, codec, raw)
	}
	be := binary.BigEndian
	be.PutUint16(out[offAttributes:], uint16(h.Attributes&^attrCodecMask|int16(codec)))
	be.PutUint32(out[offBatchLength:], uint32(len(out)-lengthFieldEnd))
	be.PutUint32(out[offRecordCount:], uint32(kept))
	be.PutUint32(out[offCRC:], checksum(out))
	return out, int(h.RecordCount) - kept, nil
}
