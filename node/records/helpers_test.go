package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLz4, CodecZstd}

// sampleRecords covers the shapes a record can take: null and empty keys
// and values, headers (with a null value), negative and large deltas.
func sampleRecords() []Record {
	return []Record{
		{Key: []byte("k0"), Value: []byte("v0")},
		{Key: nil, Value: []byte("null key")},
		{Key: []byte{}, Value: nil, TimestampDelta: 5},
		{Key: []byte("h"), Value: []byte("with headers"), TimestampDelta: -3,
			Headers: []RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "", Value: nil}, {Key: "c", Value: []byte{}}}},
		{Key: bytes.Repeat([]byte("K"), 300), Value: bytes.Repeat([]byte("value "), 2000), TimestampDelta: 1 << 40},
	}
}

// textRecords makes n records with values of valueBytes lowercase letters:
// compressible about like real text.
func textRecords(seed uint64, n, valueBytes int) []Record {
	r := rand.New(rand.NewPCG(seed, 1))
	recs := make([]Record, n)
	for i := range recs {
		v := make([]byte, valueBytes)
		for j := range v {
			v[j] = 'a' + byte(r.IntN(12))
		}
		recs[i] = Record{Key: fmt.Appendf(nil, "key-%d", i%16), Value: v, TimestampDelta: int64(i)}
	}
	return recs
}

// tb is what the helpers need from *testing.T and *rapid.T alike.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// collect returns copies of the records of b.
func collect(t tb, b []byte) []Record {
	t.Helper()
	var out []Record
	err := Records(b, func(r Record) error {
		out = append(out, cloneRecord(r))
		return nil
	})
	if err != nil {
		t.Fatalf("Records: %v", err)
	}
	return out
}

func cloneRecord(r Record) Record {
	c := r
	c.Key = cloneNullable(r.Key)
	c.Value = cloneNullable(r.Value)
	c.Headers = nil
	for _, h := range r.Headers {
		c.Headers = append(c.Headers, RecordHeader{Key: h.Key, Value: cloneNullable(h.Value)})
	}
	return c
}

func cloneNullable(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// sameRecords compares records field by field, telling null from empty.
func sameRecords(t tb, got, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.TimestampDelta != w.TimestampDelta || g.Attributes != w.Attributes {
			t.Fatalf("record %d: timestampDelta/attributes %d/%d, want %d/%d", i, g.TimestampDelta, g.Attributes, w.TimestampDelta, w.Attributes)
		}
		if !sameNullable(g.Key, w.Key) || !sameNullable(g.Value, w.Value) {
			t.Fatalf("record %d: key/value differ (nil key %v/%v, nil value %v/%v)", i, g.Key == nil, w.Key == nil, g.Value == nil, w.Value == nil)
		}
		if len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: %d headers, want %d", i, len(g.Headers), len(w.Headers))
		}
		for j := range w.Headers {
			if g.Headers[j].Key != w.Headers[j].Key || !sameNullable(g.Headers[j].Value, w.Headers[j].Value) {
				t.Fatalf("record %d header %d differs", i, j)
			}
		}
	}
}

func sameNullable(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// recrc rewrites b's CRC so that a deliberate edit reaches the checks
// behind the CRC.
func recrc(b []byte) []byte {
	binary.BigEndian.PutUint32(b[offCRC:], checksum(b))
	return b
}

func put32(b []byte, off int, v int32) { binary.BigEndian.PutUint32(b[off:], uint32(v)) }

// kgoCodec maps a codec to franz-go's compression option.
func kgoCodec(c Codec) kgo.CompressionCodec {
	switch c {
	case CodecGzip:
		return kgo.GzipCompression()
	case CodecSnappy:
		return kgo.SnappyCompression()
	case CodecLz4:
		return kgo.Lz4Compression()
	case CodecZstd:
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// kmsgBatch encodes recs the way franz-go's producer does: kmsg records,
// compressed by kgo's compressor, in a kmsg.RecordBatch.
func kmsgBatch(t testing.TB, c Codec, recs []Record, producerID int64) []byte {
	t.Helper()
	var raw []byte
	for i, r := range recs {
		kr := kmsg.Record{TimestampDelta64: r.TimestampDelta, OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		kr.Length = int32(len(kr.AppendTo(nil)) - varintSize(0))
		raw = kr.AppendTo(raw)
	}
	payload := raw
	if c != CodecNone {
		comp, err := kgo.DefaultCompressor(kgoCodec(c))
		if err != nil {
			t.Fatal(err)
		}
		out, used := comp.Compress(new(bytes.Buffer), raw)
		if int8(used) != int8(c) {
			t.Fatalf("kgo compressed with %d, want %d", used, c)
		}
		payload = append([]byte{}, out...)
	}
	kb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(c),
		LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: 1000, MaxTimestamp: 1000,
		ProducerID: producerID, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(recs)), Records: payload,
	}
	if producerID >= 0 {
		kb.ProducerEpoch, kb.FirstSequence = 0, 0
	}
	b := kb.AppendTo(nil)
	put32(b, offBatchLength, int32(len(b)-lengthFieldEnd))
	return recrc(b)
}

// wantErr checks err wraps cause and maps to code.
func wantErr(t tb, err, cause error, code int16) {
	t.Helper()
	if !errors.Is(err, cause) {
		t.Fatalf("error %v, want %v", err, cause)
	}
	if got := ErrorCode(err); got != code {
		t.Fatalf("ErrorCode(%v) = %d, want %d", err, got, code)
	}
}
