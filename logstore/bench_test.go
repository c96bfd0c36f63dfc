package logstore

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/floe-broker/floe/node/records"
)

// Benchmarks of the log on real files (OSFS), next to the disk's own
// fsync'd sequential write speed measured the same way, so the two can be
// compared as a ratio (see logstore/benchratio.sh and docs/benchmarks.md).
// The directory is a fresh temp dir, or one under $FLOE_BENCH_DIR.

func benchDir(b *testing.B) string {
	if root := os.Getenv("FLOE_BENCH_DIR"); root != "" {
		d, err := os.MkdirTemp(root, "floe-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return b.TempDir()
}

// batchTemplate builds an uncompressed batch of records with recBytes-byte
// values, about batchBytes long.
func batchTemplate(b *testing.B, recBytes, batchBytes int) []byte {
	value := make([]byte, recBytes)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	var recs []testRec
	for size := records.HeaderBytes; size < batchBytes; size += recBytes + 12 {
		recs = append(recs, testRec{key: []byte(fmt.Sprintf("key-%06d", len(recs))), value: value})
	}
	return makeBatch(b, 0, 0, records.CodecNone, recs)
}

// BenchmarkDurableAppend appends rounds of batches and syncs after each
// round: one group commit per round. The rate is payload bytes made durable.
func BenchmarkDurableAppend(b *testing.B) {
	for _, round := range []int{256 << 10, 1 << 20} {
		for _, c := range []struct{ rec, batch int }{{100, 16 << 10}, {100, 64 << 10}, {1 << 10, 16 << 10}, {1 << 10, 64 << 10}} {
			name := fmt.Sprintf("round=%s/rec=%s/batch=%s", byteSize(round), byteSize(c.rec), byteSize(c.batch))
			b.Run(name, func(b *testing.B) {
				l, _, err := Open(NewOSFS(benchDir(b)), "p0", Options{SegmentBytes: 256 << 20})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				tmpl := batchTemplate(b, c.rec, c.batch)
				perRound := max(1, round/len(tmpl))
				b.SetBytes(int64(perRound * len(tmpl)))
				for b.Loop() {
					for k := 0; k < perRound; k++ {
						binary.BigEndian.PutUint64(tmpl, uint64(l.NextOffset()))
						if err := l.Append(Entry{Index: l.LastIndex() + 1, Term: 1, Kind: KindBatch, Data: tmpl}); err != nil {
							b.Fatal(err)
						}
					}
					if err := l.Sync(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkDiskSeqWriteFsync is the disk's baseline: a Go loop appending
// blocks of the round size to a file and fsyncing after each, as
// dd conv=fdatasync would, with no log logic at all.
func BenchmarkDiskSeqWriteFsync(b *testing.B) {
	for _, round := range []int{256 << 10, 1 << 20} {
		b.Run("round="+byteSize(round), func(b *testing.B) {
			f, err := os.Create(filepath.Join(benchDir(b), "seq"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := make([]byte, round)
			for i := range buf {
				buf[i] = byte(i)
			}
			b.SetBytes(int64(round))
			for b.Loop() {
				if _, err := f.Write(buf); err != nil {
					b.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSequentialRead reads a 64 MiB log (64 KiB batches of 1 KiB
// records) from its start, 1 MiB per Read, checksums verified. The files
// are in the page cache: this measures the log's read path, not the disk.
func BenchmarkSequentialRead(b *testing.B) {
	l, _, err := Open(NewOSFS(benchDir(b)), "p0", Options{SegmentBytes: 16 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	fill64MiB(b, l)
	var total int64
	for b.Loop() {
		total = 0
		for off := l.StartOffset(); off < l.NextOffset(); {
			res, err := l.Read(off, 1<<20, l.NextOffset())
			if err != nil {
				b.Fatal(err)
			}
			total += int64(len(res.Data))
			off = res.NextOffset
		}
	}
	b.SetBytes(total)
}

// BenchmarkAppendVsDisk pairs the two measurements: each iteration makes
// one round durable through the log (appends, then Sync) and writes the same
// number of bytes to a plain file with one fsync, timing each separately.
// Interleaving them makes the ratio robust on a noisy shared disk, where
// separate benchmarks drift by 2x between runs. It reports log-MB/s,
// disk-MB/s and log/disk-% (payload bytes: the log also writes its 56-byte
// entry headers and index files).
func BenchmarkAppendVsDisk(b *testing.B) {
	for _, round := range []int{256 << 10, 1 << 20} {
		for _, c := range []struct{ rec, batch int }{{100, 16 << 10}, {100, 64 << 10}, {1 << 10, 16 << 10}, {1 << 10, 64 << 10}} {
			name := fmt.Sprintf("round=%s/rec=%s/batch=%s", byteSize(round), byteSize(c.rec), byteSize(c.batch))
			b.Run(name, func(b *testing.B) { benchAppendVsDisk(b, round, c.rec, c.batch) })
		}
	}
}

func benchAppendVsDisk(b *testing.B, round, rec, batch int) {
	dir := benchDir(b)
	l, _, err := Open(NewOSFS(dir), "p0", Options{SegmentBytes: 256 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	f, err := os.Create(filepath.Join(dir, "plain"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	tmpl := batchTemplate(b, rec, batch)
	perRound := max(1, round/len(tmpl))
	plain := make([]byte, perRound*len(tmpl))
	var logTime, diskTime time.Duration
	var bytes int64
	for b.Loop() {
		start := time.Now()
		for k := 0; k < perRound; k++ {
			binary.BigEndian.PutUint64(tmpl, uint64(l.NextOffset()))
			if err := l.Append(Entry{Index: l.LastIndex() + 1, Term: 1, Kind: KindBatch, Data: tmpl}); err != nil {
				b.Fatal(err)
			}
		}
		if err := l.Sync(); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if _, err := f.Write(plain); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		logTime += mid.Sub(start)
		diskTime += time.Since(mid)
		bytes += int64(len(plain))
	}
	logRate := float64(bytes) / logTime.Seconds() / 1e6
	diskRate := float64(bytes) / diskTime.Seconds() / 1e6
	b.ReportMetric(logRate, "log-MB/s")
	b.ReportMetric(diskRate, "disk-MB/s")
	b.ReportMetric(100*logRate/diskRate, "log/disk-%")
}

// fill64MiB appends 64 KiB batches of 1 KiB records to l until it holds
// 64 MiB, then syncs it.
func fill64MiB(b *testing.B, l *Log) {
	b.Helper()
	tmpl := batchTemplate(b, 1<<10, 64<<10)
	for l.Stats().SizeBytes < 64<<20 {
		binary.BigEndian.PutUint64(tmpl, uint64(l.NextOffset()))
		if err := l.Append(Entry{Index: l.LastIndex() + 1, Term: 1, Kind: KindBatch, Data: tmpl}); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		b.Fatal(err)
	}
}
