package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"testing"

	"github.com/floe-broker/floe/node/records"
)

func withBase(b []byte, base int64) []byte {
	binary.BigEndian.PutUint64(b, uint64(base)) // outside the CRC, as the broker sets it
	return b
}

func TestBatchRoundTrip(t *testing.T) {
	a := withBase(encodeBatch([]string{"1", "22", "333"}, 1700000000000, producerStamp{pid: 7, epoch: 2, seq: 40}), 100)
	b := withBase(encodeBatch([]string{"x"}, 1700000000001, producerStamp{pid: -1}), 103)
	got, err := decodeBatches(append(slices.Clone(a), b...))
	if err != nil {
		t.Fatal(err)
	}
	want := []decodedRecord{{100, "1", 0}, {101, "22", 0}, {102, "333", 0}, {103, "x", 0}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("decoded %v, want %v", got, want)
	}
}

// The broker's own codec accepts what the simulated clients write: the two
// were written apart, so this checks each against the other.
func TestBatchAcceptedByBroker(t *testing.T) {
	b := encodeBatch([]string{"a", "b"}, 1700000000000, producerStamp{pid: 9, epoch: 1, seq: 5})
	h, err := records.Verify(b)
	if err != nil {
		t.Fatalf("broker rejects a sim batch: %v", err)
	}
	if h.ProducerID != 9 || h.ProducerEpoch != 1 || h.BaseSequence != 5 || h.RecordCount != 2 || h.LastOffsetDelta != 1 {
		t.Errorf("broker reads header %+v", h)
	}
	plain, err := records.Verify(encodeBatch([]string{"a"}, 1, producerStamp{pid: -1}))
	if err != nil || plain.ProducerID != -1 || plain.BaseSequence != -1 {
		t.Errorf("plain batch: header %+v, err %v", plain, err)
	}
}

func TestBatchDecodeRejectsDamage(t *testing.T) {
	good := encodeBatch([]string{"value"}, 1, producerStamp{pid: -1})
	for i := batchCRCStart; i < len(good); i++ {
		bad := slices.Clone(good)
		bad[i] ^= 0x04
		if _, err := decodeBatches(bad); !errors.Is(err, errCorruptBatch) {
			t.Fatalf("bit flipped in byte %d: err %v, want errCorruptBatch", i, err)
		}
	}
	// A set cut inside its last batch is a fetch at its byte limit, not damage.
	two := append(slices.Clone(good), good...)
	for cut := len(good); cut < len(two); cut++ {
		got, err := decodeBatches(two[:cut])
		if err != nil || len(got) != 1 {
			t.Fatalf("cut at %d: %d records, err %v", cut, len(got), err)
		}
	}
	short := slices.Clone(good)
	binary.BigEndian.PutUint32(short[batchLenAt:], 3)
	if _, err := decodeBatches(short); !errors.Is(err, errCorruptBatch) {
		t.Errorf("impossible batch length: err %v", err)
	}
}

func TestBatchDecodeSkipsControlBatches(t *testing.T) {
	ctl := encodeBatch([]string{"marker"}, 1, producerStamp{pid: -1})
	binary.BigEndian.PutUint16(ctl[batchCRCStart:], 0x20) // attributes: control
	binary.BigEndian.PutUint32(ctl[batchCRCAt:], crcOf(ctl))
	data := append(withBase(ctl, 5), withBase(encodeBatch([]string{"v"}, 1, producerStamp{pid: -1}), 6)...)
	got, err := decodeBatches(data)
	if err != nil || fmt.Sprint(got) != fmt.Sprint([]decodedRecord{{6, "v", 0}}) {
		t.Errorf("got %v, %v", got, err)
	}
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b[batchCRCStart:], crcTable) }

// Each codec round-trips through the sim's encoder and decoder, and the
// broker's codec reads the same records and headers from it.
func TestBatchCodecsRoundTrip(t *testing.T) {
	values := []string{"1", "22", strings.Repeat("333", 100)}
	for codec := int8(0); codec < codecsN; codec++ {
		b := withBase(encodeBatchCodec(values, []string{"k1", "", "k3"}, 1700000000000, producerStamp{pid: 7, epoch: 2, seq: 40}, codec), 10)
		got, err := decodeBatches(b)
		if err != nil {
			t.Fatalf("%s: %v", codecNames[codec], err)
		}
		want := []decodedRecord{{10, values[0], codec}, {11, values[1], codec}, {12, values[2], codec}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: decoded %v, want %v", codecNames[codec], got, want)
		}
		h, err := records.Verify(b)
		if err != nil || h.Codec() != records.Codec(codec) {
			t.Fatalf("%s: broker reads header %+v, err %v", codecNames[codec], h, err)
		}
		i := 0
		err = records.Records(b, func(r records.Record) error {
			want := valueHeaders(r.Value)
			if string(r.Value) != values[i] || len(r.Headers) != len(want) {
				return fmt.Errorf("record %d: value %q, %d headers", i, r.Value, len(r.Headers))
			}
			for j, hd := range r.Headers {
				if hd.Key != want[j].Key || string(hd.Value) != string(want[j].Value) || (hd.Value == nil) != (want[j].Value == nil) {
					return fmt.Errorf("record %d header %d: %q=%q", i, j, hd.Key, hd.Value)
				}
			}
			i++
			return nil
		})
		if err != nil || i != len(values) {
			t.Errorf("%s: broker reads %d records: %v", codecNames[codec], i, err)
		}
	}
}

// What the broker writes with each codec when it rewrites a batch (snappy
// xerial-framed) the sim reads; a record whose headers were lost or
// changed is errHeaders, not corruption.
func TestBatchHeadersChecked(t *testing.T) {
	rec := func(v string, hs []records.RecordHeader) records.Record {
		return records.Record{Value: []byte(v), Headers: hs}
	}
	good := func(v string) []records.RecordHeader {
		var out []records.RecordHeader
		for _, h := range valueHeaders([]byte(v)) {
			out = append(out, records.RecordHeader{Key: h.Key, Value: h.Value})
		}
		return out
	}
	for c := records.CodecNone; c <= records.CodecZstd; c++ {
		b := records.Build(records.BuildOptions{Codec: c}, []records.Record{rec("a", good("a")), rec("bb", good("bb"))})
		got, err := decodeBatches(b)
		if err != nil || len(got) != 2 || got[1].value != "bb" || got[1].codec != int8(c) {
			t.Errorf("broker's %v batch: %v, %v", c, got, err)
		}
		bad := [][]records.RecordHeader{nil, good("b")[:2], good("bb"), append(good("b"), records.RecordHeader{Key: "x"})}
		for i, hs := range bad {
			b := records.Build(records.BuildOptions{Codec: c}, []records.Record{rec("a", good("a")), rec("b", hs)})
			_, err := decodeBatches(b)
			if !errors.Is(err, errHeaders) || errors.Is(err, errCorruptBatch) || decodeErrKind(err) != "record-headers" {
				t.Errorf("%v batch, bad headers %d: err %v, want errHeaders", c, i, err)
			}
		}
	}
	nullLost := good("b")
	nullLost[2].Value = []byte{}
	if _, err := decodeBatches(records.Build(records.BuildOptions{}, []records.Record{rec("b", nullLost)})); !errors.Is(err, errHeaders) {
		t.Errorf("a null header value read back empty: err %v", err)
	}
}

func TestAppendHex32(t *testing.T) {
	for _, v := range []uint32{0, 1, 0xabc, 0x7fffffff, 0xdeadbeef, 0xffffffff} {
		if got, want := string(appendHex32(nil, v)), fmt.Sprintf("%08x", v); got != want {
			t.Errorf("appendHex32(%#x) = %q, want %q", v, got, want)
		}
	}
}
