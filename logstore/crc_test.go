package logstore

import (
	stdcrc "hash/crc32"
	"testing"
	"time"

	kcrc "github.com/klauspost/crc32"
)

// BenchmarkCRC32C compares the two CRC-32C implementations on entry-sized
// inputs; crc.go uses the faster one (see docs/benchmarks.md).
func BenchmarkCRC32C(b *testing.B) {
	stdTable := stdcrc.MakeTable(stdcrc.Castagnoli)
	kTable := kcrc.MakeTable(kcrc.Castagnoli)
	for _, size := range []int{64, 1 << 10, 16 << 10, 64 << 10} {
		buf := make([]byte, size)
		for i := range buf {
			buf[i] = byte(i * 7)
		}
		b.Run("std/"+byteSize(size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				stdcrc.Checksum(buf, stdTable)
			}
		})
		b.Run("klauspost/"+byteSize(size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				kcrc.Checksum(buf, kTable)
			}
		})
	}
}

// BenchmarkCRC32CPaired times both implementations alternately inside
// each iteration (a burst of calls each), so a noisy machine slows both
// alike; it reports each one's MB/s and std/klauspost-% (above 100: the
// standard library is faster).
func BenchmarkCRC32CPaired(b *testing.B) {
	stdTable := stdcrc.MakeTable(stdcrc.Castagnoli)
	kTable := kcrc.MakeTable(kcrc.Castagnoli)
	for _, size := range []int{64, 1 << 10, 16 << 10, 64 << 10} {
		buf := make([]byte, size)
		for i := range buf {
			buf[i] = byte(i * 7)
		}
		calls := max(1, (256<<10)/size)
		b.Run(byteSize(size), func(b *testing.B) {
			var stdTime, kTime time.Duration
			var sink uint32
			for b.Loop() {
				t0 := time.Now()
				for i := 0; i < calls; i++ {
					sink += stdcrc.Checksum(buf, stdTable)
				}
				t1 := time.Now()
				for i := 0; i < calls; i++ {
					sink += kcrc.Checksum(buf, kTable)
				}
				stdTime += t1.Sub(t0)
				kTime += time.Since(t1)
			}
			bytes := float64(b.N * calls * size)
			b.ReportMetric(bytes/stdTime.Seconds()/1e6, "std-MB/s")
			b.ReportMetric(bytes/kTime.Seconds()/1e6, "klauspost-MB/s")
			b.ReportMetric(100*kTime.Seconds()/stdTime.Seconds(), "std/klauspost-%")
			_ = sink
		})
	}
}

func TestCRC32CImplementationsAgree(t *testing.T) {
	stdTable := stdcrc.MakeTable(stdcrc.Castagnoli)
	kTable := kcrc.MakeTable(kcrc.Castagnoli)
	buf := make([]byte, 70000)
	for i := range buf {
		buf[i] = byte(i*31 + i>>8)
	}
	for _, n := range []int{0, 1, 63, 1024, 4097, 70000} {
		if a, b := stdcrc.Checksum(buf[:n], stdTable), kcrc.Checksum(buf[:n], kTable); a != b {
			t.Fatalf("n=%d: std %08x klauspost %08x", n, a, b)
		}
		if crc32c(buf[:n]) != stdcrc.Checksum(buf[:n], stdTable) {
			t.Fatalf("n=%d: crc32c disagrees with the standard library", n)
		}
	}
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return itoa(n>>20) + "MiB"
	case n >= 1<<10:
		return itoa(n>>10) + "KiB"
	}
	return itoa(n) + "B"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
