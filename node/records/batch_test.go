package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Our batches decode with franz-go's reader and decompressor, record for
// record.
func TestBuildDecodesWithKmsg(t *testing.T) {
	want := sampleRecords()
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			b := Build(BuildOptions{BaseOffset: 7, PartitionLeaderEpoch: 3, Codec: c, BaseTimestamp: 1e12}, want)
			var kb kmsg.RecordBatch
			if err := kb.ReadFrom(b); err != nil {
				t.Fatal(err)
			}
			if kb.FirstOffset != 7 || kb.PartitionLeaderEpoch != 3 || kb.NumRecords != int32(len(want)) ||
				kb.LastOffsetDelta != int32(len(want)-1) || kb.ProducerID != -1 || kb.FirstSequence != -1 {
				t.Fatalf("header as kmsg reads it: %+v", kb)
			}
			if kb.MaxTimestamp != 1e12+1<<40 {
				t.Fatalf("maxTimestamp %d", kb.MaxTimestamp)
			}
			raw, err := kgo.DefaultDecompressor().Decompress(kb.Records, kgo.CompressionCodecType(c))
			if err != nil {
				t.Fatal(err)
			}
			var got []Record
			for i := 0; len(raw) > 0; i++ {
				l, n := binary.Varint(raw)
				var kr kmsg.Record
				if err := kr.ReadFrom(raw[:n+int(l)]); err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				raw = raw[n+int(l):]
				if kr.OffsetDelta != int32(i) {
					t.Fatalf("record %d has offset delta %d", i, kr.OffsetDelta)
				}
				r := Record{TimestampDelta: kr.TimestampDelta64, Key: kr.Key, Value: kr.Value}
				for _, h := range kr.Headers {
					r.Headers = append(r.Headers, RecordHeader{Key: h.Key, Value: h.Value})
				}
				got = append(got, r)
			}
			sameRecords(t, got, want)
		})
	}
}

// franz-go's batches, every codec, pass Validate and iterate back.
func TestKmsgBatchesValidate(t *testing.T) {
	want := sampleRecords()
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			b := kmsgBatch(t, c, want, 42)
			s, err := ValidateWith(b, ValidateOptions{MaxMessageBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			if s.Codec() != c || s.RecordCount != int32(len(want)) || s.ProducerID != 42 || !s.HasProducerID() {
				t.Fatalf("summary %+v", s)
			}
			if s.MinTimestamp != 1000-3 || s.MaxTimestamp != 1000+1<<40 {
				t.Fatalf("timestamps %d..%d", s.MinTimestamp, s.MaxTimestamp)
			}
			sameRecords(t, collect(t, b), want)
		})
	}
}

// A raw snappy block (no xerial framing), as older franz-go and librdkafka
// send, is accepted too.
func TestRawSnappy(t *testing.T) {
	want := textRecords(1, 50, 100)
	plain := Build(BuildOptions{}, want)
	b := append([]byte{}, plain[:HeaderBytes]...)
	b = append(b, snappy.Encode(nil, plain[HeaderBytes:])...)
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(CodecSnappy))
	put32(b, offBatchLength, int32(len(b)-lengthFieldEnd))
	recrc(b)
	if _, err := Validate(b, 0); err != nil {
		t.Fatal(err)
	}
	sameRecords(t, collect(t, b), want)
}

func TestSetters(t *testing.T) {
	b := Build(BuildOptions{Codec: CodecLz4, BaseTimestamp: 500}, textRecords(2, 10, 20))
	if err := SetBaseOffset(b, 1234); err != nil {
		t.Fatal(err)
	}
	if err := SetPartitionLeaderEpoch(b, 9); err != nil {
		t.Fatal(err)
	}
	h, err := Verify(b)
	if err != nil {
		t.Fatalf("in-place setters broke the batch: %v", err)
	}
	if h.BaseOffset != 1234 || h.PartitionLeaderEpoch != 9 || h.NextOffset() != 1244 || h.LastOffset() != 1243 {
		t.Fatalf("header %+v", h)
	}
	if err := SetMaxTimestamp(b, 777); err != nil {
		t.Fatal(err)
	}
	if h, err = Verify(b); err != nil || h.MaxTimestamp != 777 || h.HasLogAppendTime() {
		t.Fatalf("after SetMaxTimestamp: %+v, %v", h, err)
	}
	if err := SetLogAppendTime(b, 99999); err != nil {
		t.Fatal(err)
	}
	h, err = Verify(b)
	if err != nil || !h.HasLogAppendTime() || h.MaxTimestamp != 99999 || h.Codec() != CodecLz4 {
		t.Fatalf("after SetLogAppendTime: %+v, %v", h, err)
	}
	// A producer may not send what the broker marks this way.
	_, err = Validate(b, 0)
	wantErr(t, err, ErrLogAppendTime, kerr.InvalidTimestamp.Code)

	for _, short := range [][]byte{nil, b[:HeaderBytes-1]} {
		if SetBaseOffset(short, 1) == nil || SetPartitionLeaderEpoch(short, 1) == nil || SetLogAppendTime(short, 1) == nil {
			t.Fatal("setter accepted a truncated batch")
		}
	}
	if SetLogAppendTime(b[:len(b)-1], 1) == nil {
		t.Fatal("SetLogAppendTime accepted a partial batch")
	}
}

func TestSplit(t *testing.T) {
	a := Build(BuildOptions{}, textRecords(1, 3, 10))
	b := Build(BuildOptions{Codec: CodecGzip}, textRecords(2, 5, 10))
	c := Build(BuildOptions{Codec: CodecZstd}, textRecords(3, 1, 10))
	all := bytes.Join([][]byte{a, b, c}, nil)
	parts, err := Split(all)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 || !bytes.Equal(parts[0], a) || !bytes.Equal(parts[1], b) || !bytes.Equal(parts[2], c) {
		t.Fatalf("split into %d parts", len(parts))
	}
	if cap(parts[0]) != len(a) {
		t.Fatal("a part's capacity reaches into the next batch")
	}
	if parts, err := Split(nil); err != nil || parts != nil {
		t.Fatalf("Split(nil) = %v, %v", parts, err)
	}
	for _, cut := range []int{1, 11, 12, HeaderBytes - 1, HeaderBytes, len(c) - 1} {
		_, err := Split(all[:len(all)-cut])
		wantErr(t, err, ErrTruncated, kerr.CorruptMessage.Code)
	}
	for _, tail := range [][]byte{{0}, make([]byte, 60)} {
		if _, err := Split(append(append([]byte{}, all...), tail...)); err == nil {
			t.Fatalf("trailing %d bytes accepted", len(tail))
		}
	}
}

// Each rule of ValidateWith, broken alone, gives its cause and Kafka code.
func TestValidateRejects(t *testing.T) {
	base := func() []byte { return Build(BuildOptions{}, textRecords(4, 4, 30)) }
	corruptCode, invalidCode := kerr.CorruptMessage.Code, kerr.InvalidRecord.Code
	cases := []struct {
		name  string
		batch func() []byte
		opts  ValidateOptions
		cause error
		code  int16
	}{
		{"empty", func() []byte { return nil }, ValidateOptions{}, ErrTruncated, corruptCode},
		{"short header", func() []byte { return base()[:40] }, ValidateOptions{}, ErrTruncated, corruptCode},
		{"magic 1", func() []byte { b := base(); b[offMagic] = 1; return b }, ValidateOptions{}, ErrMagic, corruptCode},
		{"batchLength too small", func() []byte { b := base(); put32(b, offBatchLength, 10); return b }, ValidateOptions{}, ErrBatchLength, corruptCode},
		{"batchLength +1", func() []byte { b := base(); put32(b, offBatchLength, int32(len(b)-11)); return b }, ValidateOptions{}, ErrBatchLength, corruptCode},
		{"batchLength -1", func() []byte { b := base(); put32(b, offBatchLength, int32(len(b)-13)); return b }, ValidateOptions{}, ErrBatchLength, corruptCode},
		{"negative batchLength", func() []byte { b := base(); put32(b, offBatchLength, -5); return b }, ValidateOptions{}, ErrBatchLength, corruptCode},
		{"too large", base, ValidateOptions{MaxMessageBytes: 100}, ErrTooLarge, kerr.MessageTooLarge.Code},
		{"crc", func() []byte { b := base(); b[len(b)-1] ^= 1; return b }, ValidateOptions{}, ErrCRC, corruptCode},
		{"codec 5", func() []byte { b := base(); b[offAttributes+1] |= 5; return recrc(b) }, ValidateOptions{}, ErrCodec, corruptCode},
		{"control", func() []byte { b := base(); b[offAttributes+1] |= attrControl; return recrc(b) }, ValidateOptions{}, ErrControl, invalidCode},
		{"log append time", func() []byte { b := base(); b[offAttributes+1] |= attrLogAppendTime; return recrc(b) }, ValidateOptions{}, ErrLogAppendTime, kerr.InvalidTimestamp.Code},
		{"zero records", func() []byte { return Build(BuildOptions{}, nil) }, ValidateOptions{}, ErrRecordCount, invalidCode},
		{"lastOffsetDelta", func() []byte { b := base(); put32(b, offLastOffsetDelta, 4); return recrc(b) }, ValidateOptions{}, ErrRecordCount, invalidCode},
		{"count above records", func() []byte {
			b := base()
			put32(b, offRecordCount, 5)
			put32(b, offLastOffsetDelta, 4)
			return recrc(b)
		}, ValidateOptions{}, ErrRecords, invalidCode},
		{"count below records", func() []byte {
			b := base()
			put32(b, offRecordCount, 3)
			put32(b, offLastOffsetDelta, 2)
			return recrc(b)
		}, ValidateOptions{}, ErrRecords, invalidCode},
		{"sequence", func() []byte {
			return Build(BuildOptions{Producer: &Producer{ID: 5, Epoch: 0, BaseSequence: -1}}, textRecords(1, 2, 5))
		}, ValidateOptions{}, ErrSequence, invalidCode},
		{"offset deltas", func() []byte {
			recs := textRecords(1, 3, 5)
			recs[0].OffsetDelta, recs[1].OffsetDelta, recs[2].OffsetDelta = 0, 0, 2
			return Build(BuildOptions{KeepOffsetDeltas: true}, recs)
		}, ValidateOptions{}, ErrOffsetDelta, invalidCode},
		{"null key on compacted topic", func() []byte {
			recs := textRecords(1, 3, 5)
			recs[2].Key = nil
			return Build(BuildOptions{Codec: CodecSnappy}, recs)
		}, ValidateOptions{RequireKeys: true}, ErrNullKey, invalidCode},
		{"record length past the end", func() []byte {
			b := base()
			b[HeaderBytes] = 0x7e // zigzag 63 > its 30-odd byte body: overlaps the next record
			return recrc(b)
		}, ValidateOptions{}, ErrRecords, invalidCode},
		{"garbage gzip", func() []byte {
			b := base()
			b[offAttributes+1] |= byte(CodecGzip)
			return recrc(b)
		}, ValidateOptions{}, ErrDecompress, corruptCode},
		{"zstd bomb", func() []byte {
			return Build(BuildOptions{Codec: CodecZstd}, []Record{{Value: make([]byte, 4<<20)}})
		}, ValidateOptions{DecompressedBytesMax: 1 << 20}, ErrDecompressedTooLarge, kerr.MessageTooLarge.Code},
		{"snappy bomb", func() []byte {
			return Build(BuildOptions{Codec: CodecSnappy}, []Record{{Value: make([]byte, 4<<20)}})
		}, ValidateOptions{DecompressedBytesMax: 1 << 20}, ErrDecompressedTooLarge, kerr.MessageTooLarge.Code},
		{"gzip bomb", func() []byte {
			return Build(BuildOptions{Codec: CodecGzip}, []Record{{Value: make([]byte, 4<<20)}})
		}, ValidateOptions{DecompressedBytesMax: 1 << 20}, ErrDecompressedTooLarge, kerr.MessageTooLarge.Code},
		{"data after the records, compressed", func() []byte {
			plain := Build(BuildOptions{}, textRecords(1, 2, 5))
			raw := append(append([]byte{}, plain[HeaderBytes:]...), 1, 2, 3)
			b := compress(append([]byte{}, plain[:HeaderBytes]...), CodecLz4, raw)
			b[offAttributes+1] |= byte(CodecLz4)
			put32(b, offBatchLength, int32(len(b)-lengthFieldEnd))
			return recrc(b)
		}, ValidateOptions{}, ErrRecords, invalidCode},
		{"data after the records, uncompressed", func() []byte {
			b := append(base(), 0, 0)
			put32(b, offBatchLength, int32(len(b)-lengthFieldEnd))
			return recrc(b)
		}, ValidateOptions{}, ErrRecords, invalidCode},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.batch()
			before := append([]byte{}, b...)
			_, err := ValidateWith(b, tc.opts)
			wantErr(t, err, tc.cause, tc.code)
			if !bytes.Equal(b, before) {
				t.Fatal("ValidateWith modified its input")
			}
		})
	}
}

func TestValidateAcceptsEveryCodec(t *testing.T) {
	for _, c := range allCodecs {
		recs := textRecords(5, 200, 100)
		b := Build(BuildOptions{Codec: c, BaseTimestamp: 10, Producer: &Producer{ID: 1, Epoch: 2, BaseSequence: 3}}, recs)
		s, err := ValidateWith(b, ValidateOptions{MaxMessageBytes: len(b), RequireKeys: true})
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		plain := Build(BuildOptions{}, recs)
		if s.MinTimestamp != 10 || s.MaxTimestamp != 10+199 || s.UncompressedBytes != len(plain)-HeaderBytes {
			t.Fatalf("%v: summary %+v", c, s)
		}
		if _, err := ValidateWith(b, ValidateOptions{MaxMessageBytes: len(b) - 1}); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%v: one byte over the limit: %v", c, err)
		}
	}
}

func TestMarkers(t *testing.T) {
	p := Producer{ID: 77, Epoch: 4, BaseSequence: 12}
	for _, m := range []Marker{{ControlCommit, 3}, {ControlAbort, -1}} {
		b := BuildMarker(p, m, 100, 2, 5000)
		h, err := Verify(b)
		if err != nil {
			t.Fatal(err)
		}
		if !h.IsControl() || !h.IsTransactional() || h.ProducerID != 77 || h.ProducerEpoch != 4 ||
			h.BaseSequence != NoSequence || h.RecordCount != 1 || h.BaseOffset != 100 {
			t.Fatalf("marker header %+v", h)
		}
		recs := collect(t, b)
		got, err := ParseMarker(recs[0])
		if err != nil || got != m {
			t.Fatalf("ParseMarker = %+v, %v; want %+v", got, err, m)
		}
		_, err = Validate(b, 0)
		wantErr(t, err, ErrControl, kerr.InvalidRecord.Code)
	}
	if _, err := ParseMarker(Record{Key: []byte{0, 0, 0, 2}, Value: make([]byte, 6)}); err == nil {
		t.Fatal("control type 2 parsed as a transaction marker")
	}
	if _, err := ParseMarker(Record{Key: []byte{0}, Value: nil}); err == nil {
		t.Fatal("short control record parsed")
	}
}

func TestErrorCode(t *testing.T) {
	if ErrorCode(nil) != 0 {
		t.Fatal("nil error has a code")
	}
	if ErrorCode(errors.New("other")) != kerr.UnknownServerError.Code {
		t.Fatal("foreign error mapped to a record error")
	}
	_, err := Verify(make([]byte, 10))
	if ErrorCode(err) != kerr.CorruptMessage.Code || ErrorCode(errors.Join(errors.New("x"), err)) != kerr.CorruptMessage.Code {
		t.Fatalf("wrapped error lost its code: %v", err)
	}
}

func TestRecordsStopsOnCallbackError(t *testing.T) {
	stop := errors.New("stop")
	for _, c := range allCodecs {
		n := 0
		err := Records(Build(BuildOptions{Codec: c}, textRecords(1, 10, 10)), func(Record) error {
			n++
			if n == 3 {
				return stop
			}
			return nil
		})
		if err != stop || n != 3 {
			t.Fatalf("%v: err %v after %d records", c, err, n)
		}
	}
}

// A panic in the caller's function is the caller's: Records does not turn
// it into a decode error (it does for a panicking decoder).
func TestRecordsCallbackPanicPropagates(t *testing.T) {
	for _, c := range allCodecs {
		func() {
			defer func() {
				if r := recover(); r != "mine" {
					t.Fatalf("%v: recovered %v, want the callback's panic", c, r)
				}
			}()
			_ = Records(Build(BuildOptions{Codec: c}, textRecords(1, 3, 10)), func(Record) error { panic("mine") })
		}()
	}
	// The pool still works afterwards.
	if _, err := Validate(Build(BuildOptions{Codec: CodecZstd}, textRecords(1, 3, 10)), 0); err != nil {
		t.Fatal(err)
	}
}
