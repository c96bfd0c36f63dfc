package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
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
	want := []decodedRecord{{100, "1"}, {101, "22"}, {102, "333"}, {103, "x"}}
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
	if err != nil || fmt.Sprint(got) != fmt.Sprint([]decodedRecord{{6, "v"}}) {
		t.Errorf("got %v, %v", got, err)
	}
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b[batchCRCStart:], crcTable) }
