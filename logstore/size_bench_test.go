package logstore

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// Benchmarks of what a log of many segments costs per call: a compacted
// partition keeps every segment, so these must not grow with their number.

// BenchmarkStatsManySegments reads the size of a log of 20,000 segments,
// as the node does at every look at a partition: a compacted partition
// keeps all its segments. Its cost must not grow with their number.
func BenchmarkStatsManySegments(b *testing.B) {
	l, _, err := Open(newSim(1), "p0", Options{SegmentBytes: 1 << 10})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	tmpl := batchTemplate(b, 100, 900)
	for len(l.segs) < 20_000 {
		binary.BigEndian.PutUint64(tmpl, uint64(l.NextOffset()))
		if err := l.Append(Entry{Index: l.LastIndex() + 1, Term: 1, Kind: KindBatch, Data: tmpl}); err != nil {
			b.Fatal(err)
		}
	}
	var n int64
	for b.Loop() {
		n += l.Stats().SizeBytes
	}
	if n <= 0 {
		b.Fatal("no size")
	}
}

// BenchmarkSimFSSyncDirManyFiles creates a file in a directory of 20,000
// and syncs the directory: a segment roll of a compacted partition in the
// simulator. Its cost must not grow with the directory.
func BenchmarkSimFSSyncDirManyFiles(b *testing.B) {
	fsys := newSim(1)
	if err := fsys.MkdirAll("p0"); err != nil {
		b.Fatal(err)
	}
	create := func(i int) {
		f, err := fsys.Create(fmt.Sprintf("p0/%020d.log", i))
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	for i := 0; i < 20_000; i++ {
		create(i)
	}
	i := 20_000
	for b.Loop() {
		create(i)
		i++
		if err := fsys.SyncDir("p0"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendRollsOneSync is a follower's catch-up in one Ready: each
// iteration appends n one-record entries to a fresh log of 400-byte
// segments (a roll every three entries) and prepares one plan. Before the
// dirty set the time per entry grew with n (a scan of every file written
// so far at each roll).
func BenchmarkAppendRollsOneSync(b *testing.B) {
	for _, n := range []int{2000, 8000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			es := oneRecordEntries(b, n)
			b.ReportAllocs()
			for b.Loop() {
				l, _, err := Open(newSim(1), "p0", Options{SegmentBytes: 400})
				if err != nil {
					b.Fatal(err)
				}
				must(b, l.Append(es...))
				if l.PrepareSync() == nil {
					b.Fatal("no plan")
				}
			}
		})
	}
}
