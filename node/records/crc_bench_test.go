package records

import (
	"hash/crc32"
	"strconv"
	"testing"

	kcrc "github.com/klauspost/crc32"
)

// BenchmarkCRC compares the two CRC-32C implementations on batch sizes.
func BenchmarkCRC(b *testing.B) {
	kt := kcrc.MakeTable(kcrc.Castagnoli)
	for _, n := range []int{1 << 10, 16 << 10, 1 << 20} {
		buf := make([]byte, n)
		for i := range buf {
			buf[i] = byte(i * 7)
		}
		b.Run("stdlib/"+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				crc32.Checksum(buf, castagnoli)
			}
		})
		b.Run("klauspost/"+strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				kcrc.Checksum(buf, kt)
			}
		})
	}
}
