package logstore

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"testing"
	"time"

	"github.com/floe-broker/floe/node/records"
)

// The log reads the record-batch format (node/records) in three places:
// Append's checks (log.go), OffsetForTime (read.go) and the cleaner
// (compact.go). Damaged batches must never panic them; the cleaner copies
// a batch it cannot decode as it is.
func TestFormatUsesSurviveGarbage(t *testing.T) {
	l, _ := openLog(t, newSim(1), Options{})
	c := &cleanerState{latest: map[[16]byte]int64{keyHash([]byte("k0")): 1 << 40}}
	rng := rand.New(rand.NewSource(1))
	for _, codec := range []records.Codec{records.CodecNone, records.CodecZstd} {
		good := makeBatch(t, 0, 0, codec, []testRec{{key: []byte("k0"), value: []byte("v")}, {value: []byte("keyless"), tsDelta: 4}})
		for i := 0; i < 10000; i++ {
			b := append([]byte(nil), good[:rng.Intn(len(good)+1)]...)
			for j := rng.Intn(4); j > 0 && len(b) > 0; j-- {
				b[rng.Intn(len(b))] ^= byte(1 << rng.Intn(8))
			}
			if len(b) >= 12 {
				binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
			}
			before := append([]byte(nil), b...)
			var h records.Header
			_ = parseBatch(b, &h)
			firstRecordAtOrAfter(b, 3, 0)
			c.noteKeys(b)
			out, err := c.cleanBatch(l, b, time.UnixMilli(0), CleanConfig{})
			if err != nil {
				t.Fatalf("cleanBatch: %v", err)
			}
			if !bytes.Equal(b, before) {
				t.Fatal("a batch was modified in place")
			}
			if _, err := records.Verify(out); err != nil && !bytes.Equal(out, b) {
				t.Fatalf("the cleaner rewrote a batch it could not decode: %v", err)
			}
		}
	}
}

// TestParseBatchRefusesNegativeDeltas: Append's check keeps offsets moving
// forward.
func TestParseBatchRefusesNegativeDeltas(t *testing.T) {
	good := makeBatch(t, 0, 0, records.CodecNone, []testRec{{value: []byte("v")}})
	var h records.Header
	if err := parseBatch(good, &h); err != nil {
		t.Fatalf("good batch: %v", err)
	}
	for _, at := range []int{23, 57} { // lastOffsetDelta, recordCount
		b := append([]byte(nil), good...)
		binary.BigEndian.PutUint32(b[at:], uint32(0xFFFFFFFF))
		if err := parseBatch(b, &h); err == nil {
			t.Fatalf("a batch with -1 at byte %d was accepted", at)
		}
	}
}
