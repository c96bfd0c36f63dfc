package logstore

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"time"

	"github.com/floe-broker/floe/node/records"
)

// tb is what test helpers need from *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// testRec is a record to put in a test batch. A nil value is a tombstone.
type testRec struct {
	key, value []byte
	tsDelta    int64
}

// makeBatch builds a Kafka v2 record batch at baseOffset holding recs
// (record i at offset delta i), compressed with codec.
func makeBatch(t tb, baseOffset, baseTs int64, codec records.Codec, recs []testRec) []byte {
	t.Helper()
	rs := make([]records.Record, len(recs))
	for i, r := range recs {
		rs[i] = records.Record{TimestampDelta: r.tsDelta, Key: r.key, Value: r.value}
	}
	return records.Build(records.BuildOptions{BaseOffset: baseOffset, BaseTimestamp: baseTs, Codec: codec}, rs)
}

// simpleBatch is a batch of n small records at baseOffset.
func simpleBatch(t tb, baseOffset int64, n int, ts int64, tag string) []byte {
	recs := make([]testRec, n)
	for i := range recs {
		recs[i] = testRec{key: []byte(fmt.Sprintf("k%d", i)), value: []byte(fmt.Sprintf("%s-%d", tag, i))}
	}
	return makeBatch(t, baseOffset, ts, records.CodecNone, recs)
}

// fakeClock is a settable clock.Clock.
type fakeClock struct {
	now  time.Time
	mono time.Duration
}

func (c *fakeClock) Now() time.Time           { return c.now }
func (c *fakeClock) Monotonic() time.Duration { return c.mono }

func openLog(t tb, fsys FS, opts Options) (*Log, Recovery) {
	t.Helper()
	l, rec, err := Open(fsys, "p0", opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return l, rec
}

// appendBatches appends n batch entries of recsPer records each, in term.
func appendBatches(t tb, l *Log, n, recsPer int, term uint64, ts int64) []Entry {
	t.Helper()
	var out []Entry
	for i := 0; i < n; i++ {
		e := Entry{Index: l.LastIndex() + 1, Term: term, Kind: KindBatch,
			Data: simpleBatch(t, l.NextOffset(), recsPer, ts, fmt.Sprintf("e%d", l.LastIndex()+1))}
		if err := l.Append(e); err != nil {
			t.Fatalf("append %d: %v", e.Index, err)
		}
		out = append(out, e)
	}
	return out
}

// allEntries reads every Raft-visible entry.
func allEntries(t tb, l *Log) []Entry {
	t.Helper()
	if l.LastIndex() < l.FirstIndex() {
		return nil
	}
	es, err := l.Entries(l.FirstIndex(), l.LastIndex()+1, -1)
	if err != nil {
		t.Fatalf("entries: %v", err)
	}
	return es
}

func sameEntries(a, b []Entry) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d entries vs %d", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Index != y.Index || x.Term != y.Term || x.Kind != y.Kind || string(x.Data) != string(y.Data) {
			return fmt.Errorf("entry %d differs: (%d,%d,%d,%d bytes) vs (%d,%d,%d,%d bytes)", i,
				x.Index, x.Term, x.Kind, len(x.Data), y.Index, y.Term, y.Kind, len(y.Data))
		}
	}
	return nil
}

func newSim(seed int64) *SimFS { return NewSimFS(rand.New(rand.NewSource(seed))) }

// readAllBatches reads every batch from StartOffset up to NextOffset and
// returns them split, checking offsets are contiguous.
func readAllBatches(t tb, l *Log) [][]byte {
	t.Helper()
	var out [][]byte
	off := l.StartOffset()
	for off < l.NextOffset() {
		res, err := l.Read(off, 1<<20, l.NextOffset())
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(res.Data) == 0 {
			t.Fatalf("read at %d returned nothing before next offset %d", off, l.NextOffset())
		}
		for b := res.Data; len(b) > 0; {
			n := int(binary.BigEndian.Uint32(b[8:])) + 12
			out = append(out, b[:n])
			b = b[n:]
		}
		off = res.NextOffset
	}
	return out
}
