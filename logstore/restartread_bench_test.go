package logstore

import (
	"testing"
)

// readCountingFS counts the bytes read through the files it opens.
type readCountingFS struct {
	FS
	read *int64
}

type readCountingFile struct {
	File
	read *int64
}

func (f readCountingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	*f.read += int64(n)
	return n, err
}

func (c readCountingFS) Open(name string) (File, error) {
	f, err := c.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return readCountingFile{File: f, read: c.read}, nil
}

func (c readCountingFS) Create(name string) (File, error) {
	f, err := c.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return readCountingFile{File: f, read: c.read}, nil
}

// BenchmarkRestartRead counts the bytes a restart reads from a 64 MiB
// log held in one active segment (1 KiB records in 64 KiB batches, the
// shape of the 1 GiB start-up case in docs/benchmarks.md): recovery (Open)
// and then the replay of every entry (Entries, 8 MiB at a time, as Raft
// hands committed entries to the broker). Metrics, per restart, as
// multiples of the log's bytes: open-read-x and replay-read-x. Exact
// counts, so noise-free (issue 21: the restart reads the log twice).
func BenchmarkRestartRead(b *testing.B) {
	fsys := newSim(1)
	l, _, err := Open(fsys, "p0", Options{SegmentBytes: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	fill64MiB(b, l)
	size := float64(l.Stats().SizeBytes)
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	var openRead, replayRead int64
	for b.Loop() {
		var read int64
		l, _, err := Open(readCountingFS{FS: fsys, read: &read}, "p0", Options{SegmentBytes: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		openRead += read
		read = 0
		for lo := l.FirstIndex(); lo <= l.LastIndex(); {
			ents, err := l.Entries(lo, l.LastIndex()+1, 8<<20)
			if err != nil || len(ents) == 0 {
				b.Fatalf("entries from %d: %d, %v", lo, len(ents), err)
			}
			lo = ents[len(ents)-1].Index + 1
		}
		replayRead += read
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(openRead)/float64(b.N)/size, "open-read-x")
	b.ReportMetric(float64(replayRead)/float64(b.N)/size, "replay-read-x")
}
