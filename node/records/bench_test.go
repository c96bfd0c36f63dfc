package records

import "testing"

// BenchmarkValidate: a 16 KiB batch of 100 B records (as it is before
// compression), per codec. SetBytes is the uncompressed record bytes, so
// MB/s compares codecs on equal work.
func BenchmarkValidate(b *testing.B) {
	recs := textRecords(9, 16<<10/112, 100) // ~112 B a record encoded
	for _, c := range allCodecs {
		batch := Build(BuildOptions{Codec: c}, recs)
		plain := Build(BuildOptions{}, recs)
		b.Run(c.String(), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(plain)))
			for b.Loop() {
				if _, err := Validate(batch, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRecords iterates the same batches.
func BenchmarkRecords(b *testing.B) {
	recs := textRecords(9, 16<<10/112, 100)
	for _, c := range allCodecs {
		batch := Build(BuildOptions{Codec: c}, recs)
		b.Run(c.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := Records(batch, func(Record) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
