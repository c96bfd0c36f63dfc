package records

import (
	"errors"
	"testing"

	"pgregory.net/rapid"
)

func genRecords(t *rapid.T) []Record {
	nullable := func(label string) []byte {
		if rapid.Bool().Draw(t, label+"Null") {
			return nil
		}
		return rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, label)
	}
	n := rapid.IntRange(1, 20).Draw(t, "n")
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{
			TimestampDelta: rapid.Int64().Draw(t, "tsDelta"),
			Key:            nullable("key"),
			Value:          nullable("value"),
		}
		for range rapid.IntRange(0, 3).Draw(t, "headers") {
			recs[i].Headers = append(recs[i].Headers, RecordHeader{
				Key:   rapid.String().Draw(t, "hkey"),
				Value: nullable("hvalue"),
			})
		}
	}
	return recs
}

func genBatch(t *rapid.T) ([]byte, []Record) {
	recs := genRecords(t)
	c := rapid.SampledFrom(allCodecs).Draw(t, "codec")
	b := Build(BuildOptions{Codec: c, BaseTimestamp: rapid.Int64().Draw(t, "baseTs")}, recs)
	return b, recs
}

// Whatever the records and codec, Build then Records gives them back, and
// the batch validates.
func TestPropertyRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b, recs := genBatch(t)
		if _, err := Validate(b, 0); err != nil {
			t.Fatalf("Validate: %v", err)
		}
		sameRecords(t, collect(t, b), recs)
	})
}

// Changing any byte the CRC covers is caught by the CRC (CRC-32C detects
// every burst of up to 32 bits), by both Validate and Verify.
func TestPropertyCorruptionDetected(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b, _ := genBatch(t)
		i := rapid.IntRange(offAttributes, len(b)-1).Draw(t, "index")
		b[i] ^= rapid.ByteRange(1, 255).Draw(t, "flip")
		if _, err := Validate(b, 0); !errors.Is(err, ErrCRC) {
			t.Fatalf("byte %d of %d flipped: Validate says %v", i, len(b), err)
		}
		if _, err := Verify(b); !errors.Is(err, ErrCRC) {
			t.Fatalf("byte %d of %d flipped: Verify says %v", i, len(b), err)
		}
	})
}

// Outside the CRC, only baseOffset and partitionLeaderEpoch may change
// (the broker rewrites them); a change to batchLength, magic or the CRC
// itself is still caught.
func TestPropertyUncoveredBytes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b, _ := genBatch(t)
		i := rapid.IntRange(0, offAttributes-1).Draw(t, "index")
		b[i] ^= rapid.ByteRange(1, 255).Draw(t, "flip")
		_, err := Validate(b, 0)
		rewritable := i < offBatchLength || (i >= offLeaderEpoch && i < offMagic)
		if rewritable && err != nil {
			t.Fatalf("byte %d (broker-owned) flipped: %v", i, err)
		}
		if !rewritable && err == nil {
			t.Fatalf("byte %d flipped and the batch still validates", i)
		}
	})
}
