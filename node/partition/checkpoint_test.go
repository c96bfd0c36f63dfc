package partition

import (
	"bytes"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/floe-broker/floe/internal/wire"
)

// genProducers draws a table as followers build it: Observe, Record and
// Mark calls in log order (epochs may change, histories get cut to five,
// producers expire), with the expiry the log may have set.
func genProducers(t *rapid.T) *Producers {
	ps := NewProducers()
	if rapid.Bool().Draw(t, "shortExpiry") {
		ps.SetExpiration(rapid.Int64Range(1, 1000).Draw(t, "expirationMs"))
	}
	n := rapid.IntRange(0, 40).Draw(t, "records")
	for i := 0; i < n; i++ {
		if rapid.Bool().Draw(t, "timed") {
			ps.Observe(rapid.OneOf(rapid.Int64Range(-1, 5000), rapid.Int64()).Draw(t, "ts"))
		}
		pid := rapid.OneOf(rapid.Int64Range(0, 5), rapid.Int64()).Draw(t, "pid")
		epoch := rapid.OneOf(rapid.Int16Range(0, 3), rapid.Int16()).Draw(t, "epoch")
		if rapid.Bool().Draw(t, "marker") {
			// A marker: its coordinator epoch must survive the round trip.
			ps.Mark(pid, epoch, rapid.Int32Range(0, 1<<31-1).Draw(t, "coordEpoch"))
			continue
		}
		first := rapid.Int32Range(0, 1<<31-1).Draw(t, "first")
		ps.Record(pid, epoch, SeqBatch{
			FirstSeq:   first,
			LastSeq:    LastSeq(first, rapid.Int32Range(1, 100).Draw(t, "count")),
			BaseOffset: rapid.Int64().Draw(t, "base"),
			Index:      rapid.Uint64().Draw(t, "index"),
			Term:       rapid.Uint64().Draw(t, "term"), // not checkpointed
		})
	}
	return ps
}

// describe renders a table for comparison, leaving out Term, which a
// checkpoint does not keep (SeqBatch: "0 after a restart").
func describe(ps *Producers) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "time %d expiry %d\n", ps.NowMs(), ps.Expiration())
	for _, id := range ps.IDs() {
		st, _ := ps.Get(id)
		fmt.Fprintf(&b, "%d@%d last %d:", id, st.Epoch, st.LastMs)
		if st.CoordEpoch != 0 {
			fmt.Fprintf(&b, " coord %d", st.CoordEpoch)
		}
		for _, sb := range st.Batches {
			fmt.Fprintf(&b, " [%d..%d off %d idx %d]", sb.FirstSeq, sb.LastSeq, sb.BaseOffset, sb.Index)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func TestCheckpointRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := Checkpoint{StartOffset: rapid.Int64().Draw(t, "start"), Producers: genProducers(t)}
		enc := EncodeCheckpoint(c)
		got, err := DecodeCheckpoint(enc)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if got.StartOffset != c.StartOffset {
			t.Fatalf("start offset %d, want %d", got.StartOffset, c.StartOffset)
		}
		if g, w := describe(got.Producers), describe(c.Producers); g != w {
			t.Fatalf("producers after round trip:\n%s\nwant:\n%s", g, w)
		}
		checkTableInvariants(t, got.Producers)
		// Deterministic: the same state encodes to the same bytes.
		if again := EncodeCheckpoint(got); !bytes.Equal(again, enc) {
			t.Fatalf("re-encoding differs")
		}
	})
}

func TestCheckpointEmpty(t *testing.T) {
	c, err := DecodeCheckpoint(nil)
	if err != nil || c.StartOffset != 0 || c.Producers == nil || c.Producers.Len() != 0 {
		t.Fatalf("DecodeCheckpoint(nil) = %+v, %v; want the empty state", c, err)
	}
	// A nil table encodes as an empty one.
	c, err = DecodeCheckpoint(EncodeCheckpoint(Checkpoint{StartOffset: 9}))
	if err != nil || c.StartOffset != 9 || c.Producers.Len() != 0 {
		t.Fatalf("nil producers: %+v, %v", c, err)
	}
}

// A version-1 checkpoint (written before producers expired) still
// decodes: its producers have no time yet and start counting at the first
// timestamp the log applies.
func TestCheckpointVersion1(t *testing.T) {
	var w wire.Writer
	w.U8(1)
	w.Varint(7) // start offset
	w.Uvarint(2)
	for _, id := range []int64{4, 9} {
		w.Varint(id)
		w.U16(2)     // epoch
		w.Uvarint(1) // one batch
		w.Varint(0)
		w.Varint(3)
		w.Varint(100 * id)
		w.Uvarint(uint64(id))
	}
	c, err := DecodeCheckpoint(w.B)
	if err != nil {
		t.Fatal(err)
	}
	ps := c.Producers
	want := "time -1 expiry 86400000\n4@2 last -1: [0..3 off 400 idx 4]\n9@2 last -1: [0..3 off 900 idx 9]\n"
	if c.StartOffset != 7 || describe(ps) != want {
		t.Fatalf("decoded start %d\n%s\nwant start 7\n%s", c.StartOffset, describe(ps), want)
	}
	ps.Observe(5000)
	if st, _ := ps.Get(4); st.LastMs != 5000 || ps.Len() != 2 {
		t.Fatalf("after the first timestamp: producer 4 last %d, %d producers; want 5000, 2", st.LastMs, ps.Len())
	}
	checkTableInvariants(t, ps)
	ps.Observe(5000 + dayMs)
	if ps.Len() != 0 {
		t.Fatalf("%d producers a day later, want 0", ps.Len())
	}
}

// Every strict non-empty prefix of a checkpoint is an error (never a
// shorter, valid-looking state), and so is a checkpoint with bytes after it
// or an unknown version.
func TestCheckpointCorruptRejected(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		enc := EncodeCheckpoint(Checkpoint{StartOffset: rapid.Int64().Draw(t, "start"), Producers: genProducers(t)})
		cut := rapid.IntRange(1, len(enc)-1).Draw(t, "cut")
		if c, err := DecodeCheckpoint(enc[:cut]); err == nil {
			t.Fatalf("%d of %d bytes decoded without error: %+v", cut, len(enc), c)
		}
		if _, err := DecodeCheckpoint(append(bytes.Clone(enc), 0)); err == nil {
			t.Fatalf("trailing byte accepted")
		}
		bad := bytes.Clone(enc)
		// An unknown version (older known ones may decode the same bytes:
		// without producers, versions 3 and 4 are laid out alike).
		bad[0] = rapid.Byte().Filter(func(b byte) bool { return b == 0 || b > checkpointVersion }).Draw(t, "version")
		if _, err := DecodeCheckpoint(bad); err == nil {
			t.Fatalf("version %d accepted", bad[0])
		}
	})
}

// FuzzDecodeCheckpoint: arbitrary bytes never panic, and whatever decodes
// re-encodes to something that decodes to the same state.
func FuzzDecodeCheckpoint(f *testing.F) {
	ps := NewProducers()
	ps.Record(1, 0, SeqBatch{FirstSeq: 0, LastSeq: 4, BaseOffset: 10, Index: 3})
	ps.Record(1, 0, SeqBatch{FirstSeq: 5, LastSeq: 5, BaseOffset: 15, Index: 4})
	ps.Record(-3, 7, SeqBatch{FirstSeq: 2147483647, LastSeq: 3, BaseOffset: 0, Index: 9})
	f.Add(EncodeCheckpoint(Checkpoint{StartOffset: 12, Producers: ps}))
	f.Add([]byte{1, 0, 0})
	f.Add([]byte{1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCheckpoint(b)
		if err != nil {
			return
		}
		checkTableInvariants(t, c.Producers)
		c2, err := DecodeCheckpoint(EncodeCheckpoint(c))
		if err != nil {
			t.Fatalf("re-encoded checkpoint does not decode: %v", err)
		}
		if c2.StartOffset != c.StartOffset || describe(c2.Producers) != describe(c.Producers) {
			t.Fatalf("re-encoding changed the state")
		}
	})
}
