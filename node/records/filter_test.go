package records

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// filterSample is a franz-go batch of three records (one keyless, with a
// header), with producer fields set: what the cleaner meets.
func filterSample(t testing.TB, c Codec) []byte {
	t.Helper()
	recs := []Record{
		{Key: []byte("a"), Value: []byte("1")},
		{Key: nil, Value: []byte("keyless"), TimestampDelta: 4, Headers: []RecordHeader{{Key: "h", Value: []byte("v")}}},
		{Key: []byte("a"), Value: nil, TimestampDelta: 9},
	}
	b := kmsgBatch(t, c, recs, 42)
	binary.BigEndian.PutUint64(b[offBaseOffset:], 100)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], 1009)
	return recrc(b)
}

// keepKeyless keeps the records without a key.
func keepKeyless(r Record) bool { return r.Key == nil }

// TestFilterKeepsTheBatch: a filtered batch keeps its offsets, timestamps,
// producer fields and codec, passes Verify, and franz-go reads the kept
// record; a batch emptied of records keeps its offsets and goes
// uncompressed; one that loses nothing comes back as it was.
func TestFilterKeepsTheBatch(t *testing.T) {
	for _, c := range allCodecs {
		orig := filterSample(t, c)
		before := append([]byte{}, orig...)
		out, removed, err := Filter(orig, keepKeyless)
		if err != nil || removed != 2 {
			t.Fatalf("%v: removed %d, %v", c, removed, err)
		}
		if !bytes.Equal(orig, before) {
			t.Fatalf("%v: Filter modified its input", c)
		}
		h, err := Verify(out)
		if err != nil {
			t.Fatalf("%v: filtered batch: %v", c, err)
		}
		oh, _ := Verify(orig)
		if h.BaseOffset != 100 || h.LastOffsetDelta != 2 || h.RecordCount != 1 || h.ProducerID != 42 ||
			h.BaseTimestamp != oh.BaseTimestamp || h.MaxTimestamp != 1009 || h.Codec() != c || h.PartitionLeaderEpoch != oh.PartitionLeaderEpoch {
			t.Fatalf("%v: filtered header %+v, from %+v", c, h, oh)
		}
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(out); err != nil {
			t.Fatalf("%v: franz-go: %v", c, err)
		}
		kept := collect(t, out)
		if len(kept) != 1 || string(kept[0].Value) != "keyless" || kept[0].OffsetDelta != 1 || kept[0].TimestampDelta != 4 ||
			len(kept[0].Headers) != 1 || kept[0].Headers[0].Key != "h" {
			t.Fatalf("%v: kept %+v", c, kept)
		}

		empty, removed, err := Filter(orig, func(Record) bool { return false })
		if err != nil || removed != 3 {
			t.Fatalf("%v: emptying: removed %d, %v", c, removed, err)
		}
		if h, err := Verify(empty); err != nil || h.RecordCount != 0 || h.LastOffsetDelta != 2 || h.Codec() != CodecNone || len(empty) != HeaderBytes {
			t.Fatalf("%v: emptied batch %+v (%d bytes), %v", c, h, len(empty), err)
		}

		same, removed, err := Filter(orig, func(Record) bool { return true })
		if err != nil || removed != 0 || &same[0] != &orig[0] {
			t.Fatalf("%v: keeping everything: removed %d, %v, same slice %v", c, removed, err, err == nil && &same[0] == &orig[0])
		}
	}
}

// TestFilterKeepsSnappyFraming: a snappy batch is rewritten in the framing
// its producer chose, xerial (Java) or a raw block (franz-go before 1.20,
// librdkafka, sarama).
func TestFilterKeepsSnappyFraming(t *testing.T) {
	recs := sampleRecords()
	framed := Build(BuildOptions{Codec: CodecSnappy}, recs)
	if !xerialFramed(framed[HeaderBytes:]) {
		t.Fatal("Build wrote snappy without xerial framing")
	}
	raw := Build(BuildOptions{Codec: CodecNone}, recs)
	block := append(raw[:HeaderBytes:HeaderBytes], snappy.Encode(nil, raw[HeaderBytes:])...)
	binary.BigEndian.PutUint16(block[offAttributes:], uint16(CodecSnappy))
	put32(block, offBatchLength, int32(len(block)-lengthFieldEnd))
	block = recrc(block)
	if _, err := Validate(block, 1<<20); err != nil {
		t.Fatalf("raw-block batch: %v", err)
	}
	for name, b := range map[string][]byte{"xerial": framed, "raw block": block} {
		out, removed, err := Filter(b, func(r Record) bool { return r.Key != nil })
		if err != nil || removed != 1 {
			t.Fatalf("%s: removed %d, %v", name, removed, err)
		}
		if xerialFramed(out[HeaderBytes:]) != xerialFramed(b[HeaderBytes:]) {
			t.Fatalf("%s: rewritten in the other framing", name)
		}
		if _, err := Verify(out); err != nil {
			t.Fatalf("%s: rewritten batch: %v", name, err)
		}
		sameRecords(t, collect(t, out), append(collect(t, b)[:1:1], collect(t, b)[2:]...))
	}
}

// TestFilterRefusesWhatDoesNotDecode: a batch whose framing or records do
// not decode is an error, never a panic, and nothing is returned.
func TestFilterRefusesWhatDoesNotDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	good := filterSample(t, CodecNone)
	refused := 0
	for i := 0; i < 20000; i++ {
		b := append([]byte(nil), good[:rng.IntN(len(good)+1)]...)
		for j := rng.IntN(4); j > 0 && len(b) > 0; j-- {
			b[rng.IntN(len(b))] ^= byte(1 << rng.IntN(8))
		}
		if len(b) >= lengthFieldEnd {
			put32(b, offBatchLength, int32(len(b)-lengthFieldEnd))
		}
		if rng.IntN(2) == 0 && len(b) > offAttributes+1 {
			b[offAttributes+1] = byte(rng.IntN(8)) // any codec
		}
		out, removed, err := Filter(b, keepKeyless)
		if err != nil {
			if out != nil || removed != 0 {
				t.Fatalf("error %v with %d bytes out, %d removed", err, len(out), removed)
			}
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("no damaged batch was refused")
	}
}

func FuzzFilter(f *testing.F) {
	for _, c := range allCodecs {
		f.Add(Build(BuildOptions{Codec: c}, sampleRecords()))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n := 0
		out, removed, err := Filter(b, func(Record) bool { n++; return n%2 == 0 })
		if err != nil {
			return
		}
		if _, err := ParseBatch(out); err != nil {
			t.Fatalf("filtered batch does not parse: %v", err)
		}
		if err := Records(out, func(Record) error { return nil }); err != nil {
			t.Fatalf("filtered batch does not decode: %v", err)
		}
		if removed != n/2+n%2 {
			t.Fatalf("removed %d of %d", removed, n)
		}
	})
}
