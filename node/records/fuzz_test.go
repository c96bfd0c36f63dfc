package records

import (
	"bytes"
	"errors"
	"testing"
)

func countRecords(t *testing.T, b []byte) int {
	n := 0
	if err := Records(b, func(Record) error { n++; return nil }); err != nil {
		t.Fatalf("Records of a valid batch: %v", err)
	}
	return n
}

// FuzzValidate feeds arbitrary bytes to every entry point that reads a
// batch. None may panic, and a batch Validate accepts must be coherent:
// Verify agrees, Split finds exactly it, and Records yields its count.
func FuzzValidate(f *testing.F) {
	for i, c := range allCodecs {
		f.Add(Build(BuildOptions{Codec: c}, textRecords(uint64(i), 3, 20)))
		f.Add(Build(BuildOptions{Codec: c}, sampleRecords()))
	}
	f.Add(BuildMarker(Producer{ID: 1}, Marker{Type: ControlCommit}, 0, 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Mutations almost never keep the CRC right, which would stop most
		// inputs at the CRC check; validate a CRC-corrected copy too, so
		// decompression and record parsing get explored.
		if len(b) >= HeaderBytes {
			fixed := recrc(append([]byte{}, b...))
			if s, err := ValidateWith(fixed, ValidateOptions{DecompressedBytesMax: 4 << 20}); err == nil {
				if n := countRecords(t, fixed); n != int(s.RecordCount) {
					t.Fatalf("Records of a valid batch: %d of %d", n, s.RecordCount)
				}
			} else if errors.Is(err, ErrCRC) {
				t.Fatalf("corrected CRC rejected: %v", err)
			}
		}
		before := append([]byte{}, b...)
		s, err := ValidateWith(b, ValidateOptions{RequireKeys: len(b)%2 == 0, DecompressedBytesMax: 4 << 20})
		n := 0
		rerr := Records(b, func(Record) error { n++; return nil })
		_, _ = ParseHeader(b)
		parts, serr := Split(b)
		if !bytes.Equal(b, before) {
			t.Fatal("input modified")
		}
		if err != nil {
			if ErrorCode(err) <= 0 {
				t.Fatalf("error %v maps to code %d", err, ErrorCode(err))
			}
			return
		}
		if _, verr := Verify(b); verr != nil {
			t.Fatalf("Validate accepted what Verify rejects: %v", verr)
		}
		if serr != nil || len(parts) != 1 || len(parts[0]) != len(b) {
			t.Fatalf("Split of a valid batch: %d parts, %v", len(parts), serr)
		}
		if rerr != nil || n != int(s.RecordCount) {
			t.Fatalf("Records of a valid batch: %d of %d, %v", n, s.RecordCount, rerr)
		}
	})
}
