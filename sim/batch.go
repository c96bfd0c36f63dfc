package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The simulated clients' record batch codec. It is written here, against
// the Kafka format, and not borrowed from node/records: a client that
// shared the broker's codec would share its bugs.
//
// A v2 batch (all integers big-endian):
//
//	baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 |
//	magic int8 (2) | crc uint32 (CRC-32C of everything after it) |
//	attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 |
//	maxTimestamp int64 | producerId int64 | producerEpoch int16 |
//	baseSequence int32 | recordCount int32 | records...
//
// Each record: length varint | attributes int8 | timestampDelta varlong |
// offsetDelta varint | key varint-bytes | value varint-bytes | headers varint.

const (
	batchCRCStart = 21 // attributes onwards
	batchCRCAt    = 17
	batchLenAt    = 8
	batchHeadLen  = 61
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// producerStamp is an idempotent producer's id, epoch and first sequence;
// pid -1 for a plain producer.
type producerStamp struct {
	pid   int64
	epoch int16
	seq   int32
}

// encodeBatch makes one uncompressed v2 batch holding values, timestamped
// ts (ms).
func encodeBatch(values []string, ts int64, ps producerStamp) []byte {
	return encodeKeyedBatch(values, nil, ts, ps)
}

// encodeKeyedBatch is encodeBatch with a key per value (nil keys: null
// keys).
func encodeKeyedBatch(values, keys []string, ts int64, ps producerStamp) []byte {
	var recs []byte
	for i, v := range values {
		var body []byte
		body = append(body, 0)                     // attributes
		body = binary.AppendVarint(body, 0)        // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		if keys == nil {
			body = binary.AppendVarint(body, -1) // null key
		} else {
			body = binary.AppendVarint(body, int64(len(keys[i])))
			body = append(body, keys[i]...)
		}
		body = binary.AppendVarint(body, int64(len(v)))
		body = append(body, v...)
		body = binary.AppendVarint(body, 0) // no headers
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	b := kmsg.RecordBatch{
		FirstOffset: 0, PartitionLeaderEpoch: -1, Magic: 2,
		LastOffsetDelta: int32(len(values) - 1), FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: ps.pid, ProducerEpoch: ps.epoch, FirstSequence: ps.seq,
		NumRecords: int32(len(values)), Records: recs,
	}
	if ps.pid < 0 {
		b.ProducerEpoch, b.FirstSequence = -1, -1
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[batchLenAt:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[batchCRCAt:], crc32.Checksum(out[batchCRCStart:], crcTable))
	return out
}

// decodedRecord is one record read back: its offset and value.
type decodedRecord struct {
	offset int64
	value  string
}

// errCorruptBatch: a fetched batch failed its CRC or did not parse. A real
// client rejects it; the simulator also counts it as served corruption.
var errCorruptBatch = errors.New("corrupt record batch")

// decodeBatches reads every record of a fetch's record set. A trailing
// partial batch (the broker may cut the set at its byte limit) is ignored,
// as clients do; anything else malformed is errCorruptBatch.
func decodeBatches(data []byte) ([]decodedRecord, error) {
	var out []decodedRecord
	for len(data) > 0 {
		if len(data) < batchHeadLen {
			return out, nil // partial trailing batch
		}
		size := int(int32(binary.BigEndian.Uint32(data[batchLenAt:]))) + 12
		if size < batchHeadLen {
			return out, fmt.Errorf("%w: batch length %d", errCorruptBatch, size)
		}
		if size > len(data) {
			return out, nil
		}
		raw := data[:size]
		data = data[size:]
		if got, want := crc32.Checksum(raw[batchCRCStart:], crcTable), binary.BigEndian.Uint32(raw[batchCRCAt:]); got != want {
			return out, fmt.Errorf("%w: crc %08x, batch says %08x", errCorruptBatch, got, want)
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil || b.Magic != 2 {
			return out, fmt.Errorf("%w: %v (magic %d)", errCorruptBatch, err, b.Magic)
		}
		if b.Attributes&0x07 != 0 {
			return out, fmt.Errorf("%w: compressed batch (codec %d): sim clients never compress", errCorruptBatch, b.Attributes&0x07)
		}
		if b.Attributes&0x20 != 0 {
			continue // a control batch holds no data records
		}
		recs, err := decodeRecords(b.Records, int(b.NumRecords))
		if err != nil {
			return out, err
		}
		out = slices.Grow(out, len(recs))
		for _, r := range recs {
			out = append(out, decodedRecord{offset: b.FirstOffset + int64(r.OffsetDelta), value: string(r.Value)})
		}
	}
	return out, nil
}

func decodeRecords(src []byte, n int) ([]kmsg.Record, error) {
	out := make([]kmsg.Record, 0, n)
	for i := 0; i < n; i++ {
		length, used := binary.Varint(src)
		if used <= 0 || length < 0 || int64(len(src)-used) < length {
			return nil, fmt.Errorf("%w: record %d framing", errCorruptBatch, i)
		}
		var r kmsg.Record
		if err := r.ReadFrom(src[:used+int(length)]); err != nil {
			return nil, fmt.Errorf("%w: record %d: %v", errCorruptBatch, i, err)
		}
		out = append(out, r)
		src = src[used+int(length):]
	}
	if len(src) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after %d records", errCorruptBatch, len(src), n)
	}
	return out, nil
}
