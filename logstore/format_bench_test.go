package logstore

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/floe-broker/floe/node/records"
)

// CPU-only benchmarks of the three places the log reads the record-batch
// format: Append (header checks on every batch: the hot path), OffsetForTime
// (decodes one batch to find a record) and the cleaner (decodes and
// rewrites batches). They run on SimFS, so no disk time hides a change in
// the format code.

// BenchmarkAppendCPU appends 16 KiB batches of 100-byte records to an
// in-memory log, syncing every 64 batches.
func BenchmarkAppendCPU(b *testing.B) {
	fresh := func() *Log {
		l, _, err := Open(newSim(1), "p0", Options{SegmentBytes: 64 << 20})
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
	l := fresh()
	defer func() { l.Close() }()
	tmpl := batchTemplate(b, 100, 16<<10)
	b.SetBytes(int64(len(tmpl)))
	n := 0
	for b.Loop() {
		binary.BigEndian.PutUint64(tmpl, uint64(l.NextOffset()))
		if err := l.Append(Entry{Index: l.LastIndex() + 1, Term: 1, Kind: KindBatch, Data: tmpl}); err != nil {
			b.Fatal(err)
		}
		if n++; n%64 == 0 {
			if err := l.Sync(); err != nil {
				b.Fatal(err)
			}
			if l.Stats().SizeBytes > 256<<20 { // keep memory bounded
				b.StopTimer()
				l.Close()
				l = fresh()
				b.StartTimer()
			}
		}
	}
}

// BenchmarkOffsetForTime looks up a timestamp inside a 16 KiB batch of
// 100-byte records, uncompressed and zstd-compressed.
func BenchmarkOffsetForTime(b *testing.B) {
	for _, codec := range []struct {
		name  string
		codec records.Codec
	}{{"none", records.CodecNone}, {"zstd", records.CodecZstd}} {
		b.Run(codec.name, func(b *testing.B) {
			l, _, err := Open(newSim(1), "p0", Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			value := make([]byte, 100)
			var recs []testRec
			for i := 0; i < 150; i++ {
				recs = append(recs, testRec{key: []byte(fmt.Sprintf("key-%06d", i)), value: value, tsDelta: int64(i)})
			}
			data := makeBatch(b, 0, 1000, codec.codec, recs)
			if err := l.Append(Entry{Index: 1, Term: 1, Kind: KindBatch, Data: data}); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				off, ok, err := l.OffsetForTime(1000 + 140)
				if err != nil || !ok || off != 140 {
					b.Fatalf("offset %d ok %v err %v", off, ok, err)
				}
			}
		})
	}
}

// BenchmarkClean compacts a log of 200 batches of 20 records over 50 keys
// (most records superseded), uncompressed and zstd-compressed. The rate is
// log bytes cleaned.
func BenchmarkClean(b *testing.B) {
	for _, codec := range []struct {
		name  string
		codec records.Codec
	}{{"none", records.CodecNone}, {"zstd", records.CodecZstd}} {
		b.Run(codec.name, func(b *testing.B) {
			var size int64
			for b.Loop() {
				b.StopTimer()
				l, _, err := Open(newSim(1), "p0", Options{SegmentBytes: 16 << 10})
				if err != nil {
					b.Fatal(err)
				}
				for i := 0; i < 200; i++ {
					var recs []testRec
					for r := 0; r < 20; r++ {
						value := []byte(fmt.Sprintf("%0100d", (i*20+r)*7919))
						recs = append(recs, testRec{key: []byte(fmt.Sprintf("key-%03d", (i*20+r)%50)), value: value})
					}
					e := Entry{Index: l.LastIndex() + 1, Term: 1, Kind: KindBatch, Data: makeBatch(b, l.NextOffset(), 1000, codec.codec, recs)}
					if err := l.Append(e); err != nil {
						b.Fatal(err)
					}
				}
				if err := l.Sync(); err != nil {
					b.Fatal(err)
				}
				size = l.Stats().SizeBytes
				b.StartTimer()
				for {
					done, err := l.CleanStep(time.UnixMilli(2000), CleanConfig{DeleteRetentionMs: 1 << 40}, l.LastIndex()+1)
					if err != nil {
						b.Fatal(err)
					}
					if done {
						break
					}
				}
				b.StopTimer()
				if l.Stats().Cleaner.RecordsRemoved == 0 {
					b.Fatal("the cleaner removed nothing")
				}
				l.Close()
				b.StartTimer()
			}
			b.SetBytes(size)
		})
	}
}
