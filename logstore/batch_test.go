package logstore

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"testing"

	"github.com/klauspost/compress/snappy/xerial"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kmsgRecords encodes records the way franz-go does.
func kmsgRecords(recs []kmsg.Record) []byte {
	var out []byte
	for i := range recs {
		r := recs[i]
		r.Length = 0
		body := r.AppendTo(nil)
		_, n := binary.Varint(body) // drop the placeholder length
		r.Length = int32(len(body) - n)
		out = r.AppendTo(out)
	}
	return out
}

func kmsgBatch(base int64, codec int, recs []kmsg.Record) []byte {
	raw := kmsgRecords(recs)
	body, err := compress(codec, raw, false)
	if err != nil {
		panic(err)
	}
	b := kmsg.RecordBatch{FirstOffset: base, Magic: 2, Attributes: int16(codec), LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp: 5000, MaxTimestamp: 5009, ProducerID: 42, ProducerEpoch: 3, FirstSequence: 7,
		NumRecords: int32(len(recs)), Records: body}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], batchCRC(out))
	return out
}

func sampleKmsgRecords() []kmsg.Record {
	return []kmsg.Record{
		{TimestampDelta64: 0, OffsetDelta: 0, Key: []byte("a"), Value: []byte("1")},
		{TimestampDelta64: 4, OffsetDelta: 1, Key: nil, Value: []byte("keyless"),
			Headers: []kmsg.Header{{Key: "h", Value: []byte("v")}}},
		{TimestampDelta64: 9, OffsetDelta: 2, Key: []byte("a"), Value: nil},
	}
}

func TestBatchHelpersReadFranzGoBatches(t *testing.T) {
	for codec := codecNone; codec <= codecZstd; codec++ {
		b := kmsgBatch(100, codec, sampleKmsgRecords())
		h, err := parseBatchHeader(b)
		must(t, err)
		if h.baseOffset != 100 || h.lastOffsetDelta != 2 || h.maxTimestamp != 5009 || h.codec() != codec || h.crc != batchCRC(b) {
			t.Fatalf("codec %d: header %+v", codec, h)
		}
		recs, err := batchRecords(b, h)
		must(t, err)
		want := sampleKmsgRecords()
		if len(recs) != len(want) {
			t.Fatalf("codec %d: %d records", codec, len(recs))
		}
		for i, r := range recs {
			w := want[i]
			if string(r.key) != string(w.Key) || (r.key == nil) != (w.Key == nil) ||
				string(r.value) != string(w.Value) || (r.value == nil) != (w.Value == nil) ||
				r.timestampDelta != w.TimestampDelta64 || r.offsetDelta != w.OffsetDelta {
				t.Fatalf("codec %d record %d: %+v", codec, i, r)
			}
		}
		if recordTimestamp(h, recs[2]) != 5009 {
			t.Fatalf("record timestamp %d", recordTimestamp(h, recs[2]))
		}
	}
}

func TestRebuiltBatchesReadInFranzGo(t *testing.T) {
	for codec := codecNone; codec <= codecZstd; codec++ {
		orig := kmsgBatch(100, codec, sampleKmsgRecords())
		h, _ := parseBatchHeader(orig)
		recs, err := batchRecords(orig, h)
		must(t, err)
		out, err := rebuildBatch(orig, h, recs[1:2]) // keep only the keyless record
		must(t, err)
		var kb kmsg.RecordBatch
		must(t, kb.ReadFrom(out))
		if kb.FirstOffset != 100 || kb.LastOffsetDelta != 2 || kb.NumRecords != 1 || kb.ProducerID != 42 ||
			kb.FirstSequence != 7 || kb.MaxTimestamp != 5009 || uint32(kb.CRC) != batchCRC(out) {
			t.Fatalf("codec %d: rebuilt header %+v", codec, kb)
		}
		raw, err := decompress(int(kb.Attributes&attrCodecMask), kb.Records)
		must(t, err)
		var kr kmsg.Record
		must(t, kr.ReadFrom(raw))
		if string(kr.Value) != "keyless" || kr.OffsetDelta != 1 || len(kr.Headers) != 1 || kr.Headers[0].Key != "h" {
			t.Fatalf("codec %d: rebuilt record %+v", codec, kr)
		}
		// An emptied batch keeps its offsets and goes uncompressed.
		empty, err := rebuildBatch(orig, h, nil)
		must(t, err)
		must(t, kb.ReadFrom(empty))
		if kb.NumRecords != 0 || kb.LastOffsetDelta != 2 || kb.Attributes&attrCodecMask != 0 || len(kb.Records) != 0 {
			t.Fatalf("codec %d: emptied batch %+v", codec, kb)
		}
	}
}

func TestSnappyFramingIsKept(t *testing.T) {
	raw := kmsgRecords(sampleKmsgRecords())
	framed := xerial.Encode(nil, raw)
	b := kmsgBatch(0, codecNone, nil)[:batchHeaderBytes]
	b = append(b, framed...)
	binary.BigEndian.PutUint16(b[21:], codecSnappy)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[57:], 3)
	binary.BigEndian.PutUint32(b[23:], 2)
	h, err := parseBatchHeader(b)
	must(t, err)
	recs, err := batchRecords(b, h)
	must(t, err)
	out, err := rebuildBatch(b, h, recs[:1])
	must(t, err)
	if !bytes.HasPrefix(out[batchHeaderBytes:], xerialMagic) {
		t.Fatal("a xerial-framed batch was rewritten unframed")
	}
}

// Malformed batches never panic the helpers; they return errors.
func TestBatchHelpersSurviveGarbage(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	good := kmsgBatch(0, codecNone, sampleKmsgRecords())
	for i := 0; i < 20000; i++ {
		b := append([]byte(nil), good[:rng.Intn(len(good)+1)]...)
		for j := rng.Intn(4); j > 0 && len(b) > 0; j-- {
			b[rng.Intn(len(b))] ^= byte(1 << rng.Intn(8))
		}
		if len(b) >= 12 {
			binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
		}
		if rng.Intn(2) == 0 && len(b) > 22 {
			b[22] = byte(rng.Intn(8)) // any codec
		}
		h, err := parseBatchHeader(b)
		if err != nil {
			continue
		}
		if recs, err := batchRecords(b, h); err == nil {
			rebuildBatch(b, h, recs)
		}
		firstRecordAtOrAfter(b, 3, 0)
	}
}

func FuzzBatchRecords(f *testing.F) {
	for codec := codecNone; codec <= codecZstd; codec++ {
		f.Add(kmsgBatch(0, codec, sampleKmsgRecords()))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseBatchHeader(b)
		if err != nil {
			return
		}
		if recs, err := batchRecords(b, h); err == nil {
			if _, err := rebuildBatch(b, h, recs); err != nil {
				t.Fatalf("rebuild of decodable records failed: %v", err)
			}
		}
	})
}
