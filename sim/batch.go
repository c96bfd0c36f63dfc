package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The simulated clients' record batch codec. It is written here, against
// the Kafka format, and not borrowed from node/records: a client that
// shared the broker's codec would share its bugs. Compression is franz-go's
// own (kgo.DefaultCompressor and DefaultDecompressor), as a franz-go client
// compresses and decompresses: gzip, snappy (a raw block, as franz-go
// sends), lz4 and zstd; reading, also the xerial-framed snappy the broker
// writes when it rewrites a batch.
//
// Every record carries headers derived from its value (valueHeaders), so
// a reader checks that the broker kept them, whatever it did to the batch.
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

// codecs are the batch codecs a sim client draws from, by Kafka's codec
// number (attributes bits 0-2): 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
const codecsN = 5

var codecNames = [codecsN]string{"none", "gzip", "snappy", "lz4", "zstd"}

// compressors[c] compresses with codec c (nil for none); decompressor
// reads them all. Both are safe for concurrent use and deterministic.
var (
	compressors = func() (out [codecsN]kgo.Compressor) {
		for c, codec := range []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(),
			kgo.Lz4Compression(), kgo.ZstdCompression()} {
			comp, err := kgo.DefaultCompressor(codec)
			if err != nil {
				panic(err)
			}
			out[c+1] = comp
		}
		return out
	}()
	decompressor = kgo.DefaultDecompressor()
)

// drawCodec picks a batch's codec: two thirds of the batches are not
// compressed (the simulator's CPU budget), the rest use each codec alike.
func drawCodec(rng *rand.Rand) int8 {
	if rng.Intn(3) != 0 {
		return 0
	}
	return int8(1 + rng.Intn(codecsN-1))
}

// valueHeaders are the headers a sim client attaches to a record of value
// v: its length, its CRC-32 (IEEE), and a header with a null value.
func valueHeaders(v []byte) [3]kmsg.Header {
	return [3]kmsg.Header{
		{Key: "sim-len", Value: strconv.AppendInt(nil, int64(len(v)), 10)},
		{Key: "sim-crc", Value: appendHex32(nil, crc32.ChecksumIEEE(v))},
		{Key: "sim-null"},
	}
}

// errHeaders: a record read back does not carry the headers its producer
// attached to its value. The broker lost or changed them.
var errHeaders = errors.New("record headers do not match the value")

// checkHeaders reports whether r carries exactly valueHeaders(r.Value). It
// runs on every record read back, so it compares without allocating.
func checkHeaders(r *kmsg.Record) error {
	var lenBuf, crcBuf [16]byte
	lenV := strconv.AppendInt(lenBuf[:0], int64(len(r.Value)), 10)
	crcV := appendHex32(crcBuf[:0], crc32.ChecksumIEEE(r.Value))
	hs := r.Headers
	if len(hs) == 3 && hs[0].Key == "sim-len" && bytes.Equal(hs[0].Value, lenV) && hs[0].Value != nil &&
		hs[1].Key == "sim-crc" && bytes.Equal(hs[1].Value, crcV) && hs[1].Value != nil &&
		hs[2].Key == "sim-null" && hs[2].Value == nil {
		return nil
	}
	want := valueHeaders(r.Value)
	if len(hs) != len(want) {
		return fmt.Errorf("%w: value %q has %d headers, want %d", errHeaders, r.Value, len(hs), len(want))
	}
	for i, h := range hs {
		w := want[i]
		if h.Key != w.Key || !bytes.Equal(h.Value, w.Value) || (h.Value == nil) != (w.Value == nil) {
			return fmt.Errorf("%w: value %q header %d is %q=%q, want %q=%q", errHeaders, r.Value, i, h.Key, h.Value, w.Key, w.Value)
		}
	}
	return fmt.Errorf("%w: value %q", errHeaders, r.Value) // not reached: the fast check and this one agree
}

// appendHex32 appends v as 8 lower-case hex digits, as %08x does.
func appendHex32(dst []byte, v uint32) []byte {
	const digits = "0123456789abcdef"
	for shift := 28; shift >= 0; shift -= 4 {
		dst = append(dst, digits[(v>>uint(shift))&0xf])
	}
	return dst
}

// decodeErrKind is the violation kind of a decodeBatches error.
func decodeErrKind(err error) string {
	if errors.Is(err, errHeaders) {
		return "record-headers"
	}
	return "served-corruption"
}

// encodeBatch makes one uncompressed v2 batch holding values, timestamped
// ts (ms).
func encodeBatch(values []string, ts int64, ps producerStamp) []byte {
	return encodeKeyedBatch(values, nil, ts, ps)
}

// encodeKeyedBatch is encodeBatch with a key per value (nil keys: null
// keys).
func encodeKeyedBatch(values, keys []string, ts int64, ps producerStamp) []byte {
	return encodeBatchCodec(values, keys, ts, ps, 0)
}

// encodeBatchCodec is encodeKeyedBatch compressed with codec (codecs).
func encodeBatchCodec(values, keys []string, ts int64, ps producerStamp, codec int8) []byte {
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
		hs := valueHeaders([]byte(v))
		body = binary.AppendVarint(body, int64(len(hs)))
		for _, h := range hs {
			body = binary.AppendVarint(body, int64(len(h.Key)))
			body = append(body, h.Key...)
			if h.Value == nil {
				body = binary.AppendVarint(body, -1)
			} else {
				body = binary.AppendVarint(body, int64(len(h.Value)))
				body = append(body, h.Value...)
			}
		}
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	var attrs int16
	if codec != 0 {
		out, used := compressors[codec].Compress(new(bytes.Buffer), recs)
		if int8(used) != codec {
			panic(fmt.Sprintf("sim: compressing with %s used codec %d", codecNames[codec], used))
		}
		recs, attrs = slices.Clone(out), int16(codec)
	}
	b := kmsg.RecordBatch{Attributes: attrs,
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

// decodedRecord is one record read back: its offset and value, and the
// codec of its batch.
type decodedRecord struct {
	offset int64
	value  string
	codec  int8
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
		if b.Attributes&0x20 != 0 {
			continue // a control batch holds no data records
		}
		codec := int8(b.Attributes & 0x07)
		body := b.Records
		if codec != 0 {
			if codec >= codecsN {
				return out, fmt.Errorf("%w: unknown codec %d", errCorruptBatch, codec)
			}
			var err error
			if body, err = decompressor.Decompress(body, kgo.CompressionCodecType(codec)); err != nil {
				return out, fmt.Errorf("%w: %s batch at offset %d: %v", errCorruptBatch, codecNames[codec], b.FirstOffset, err)
			}
		}
		recs, err := decodeRecords(body, int(b.NumRecords))
		if err != nil {
			return out, err
		}
		out = slices.Grow(out, len(recs))
		for i := range recs {
			r := &recs[i]
			o := b.FirstOffset + int64(r.OffsetDelta)
			if err := checkHeaders(r); err != nil {
				return out, fmt.Errorf("offset %d (%s batch): %w", o, codecNames[codec], err)
			}
			out = append(out, decodedRecord{offset: o, value: string(r.Value), codec: codec})
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
