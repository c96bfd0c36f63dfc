package partition

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// modelProducers is an obviously-correct reading of kafka-notes.md,
// "Idempotent producer, broker side": per producer id, the epoch and every
// batch recorded in it (the model never forgets; it looks at the last five
// when asked).
type modelProducers map[int64]*modelProducer

type modelProducer struct {
	epoch   int16
	batches []SeqBatch
}

const seqSpace = int64(math.MaxInt32) + 1 // sequences live in [0, MaxInt32] and wrap

func modelLastSeq(first, count int32) int32 {
	return int32((int64(first) + int64(count) - 1) % seqSpace)
}

func modelNext(seq int32) int32 { return int32((int64(seq) + 1) % seqSpace) }

func (m modelProducers) remembered(pid int64) []SeqBatch {
	st := m[pid]
	if st == nil {
		return nil
	}
	if n := len(st.batches); n > 5 {
		return st.batches[n-5:]
	}
	return st.batches
}

func (m modelProducers) check(pid int64, epoch int16, first, last int32) (Verdict, SeqBatch) {
	st := m[pid]
	if st == nil {
		// Never seen: only a stream start is acceptable.
		if first == 0 {
			return Accept, SeqBatch{}
		}
		return OutOfOrder, SeqBatch{}
	}
	if epoch < st.epoch {
		return Fenced, SeqBatch{}
	}
	if epoch > st.epoch {
		// A new epoch starts at sequence 0.
		if first == 0 {
			return Accept, SeqBatch{}
		}
		return OutOfOrder, SeqBatch{}
	}
	for _, b := range m.remembered(pid) {
		if b.FirstSeq == first && b.LastSeq == last {
			return Duplicate, b
		}
	}
	if first == modelNext(st.batches[len(st.batches)-1].LastSeq) {
		return Accept, SeqBatch{}
	}
	return OutOfOrder, SeqBatch{}
}

func (m modelProducers) record(pid int64, epoch int16, b SeqBatch) {
	st := m[pid]
	if st == nil || st.epoch != epoch {
		st = &modelProducer{epoch: epoch}
		m[pid] = st
	}
	st.batches = append(st.batches, b)
}

// producerMachine drives Producers and the model with the same calls.
type producerMachine struct {
	real   *Producers
	model  modelProducers
	offset int64
	index  uint64
}

func (pm *producerMachine) pid(t *rapid.T) int64 {
	return rapid.SampledFrom([]int64{0, 1, 7, 1 << 40}).Draw(t, "pid")
}

// batch draws a batch that is likely to be interesting for pid: the next
// in sequence, a retry of a remembered (or forgotten) one, a fresh start, or
// anything.
func (pm *producerMachine) batch(t *rapid.T, pid int64) (epoch int16, first int32, count int32) {
	st := pm.model[pid]
	epoch = 0
	if st != nil {
		epoch = st.epoch + int16(rapid.IntRange(-1, 1).Draw(t, "epochStep"))
	}
	count = rapid.OneOf(rapid.Int32Range(1, 5), rapid.Int32Range(1, 1000)).Draw(t, "count")
	switch rapid.IntRange(0, 3).Draw(t, "shape") {
	case 0: // next in sequence
		if st != nil {
			first = modelNext(st.batches[len(st.batches)-1].LastSeq)
		}
	case 1: // a retry of any batch of this epoch, remembered or not
		if st != nil {
			b := rapid.SampledFrom(st.batches).Draw(t, "retry")
			first, count = b.FirstSeq, int32((int64(b.LastSeq)-int64(b.FirstSeq)+seqSpace)%seqSpace+1)
		}
	case 2: // a fresh start
		first = 0
	default:
		first = rapid.OneOf(rapid.Int32Range(0, 20), rapid.Int32Range(math.MaxInt32-20, math.MaxInt32)).Draw(t, "first")
	}
	return epoch, first, count
}

// Produce is what a leader does: check, and record only what is accepted.
func (pm *producerMachine) Produce(t *rapid.T) {
	pid := pm.pid(t)
	epoch, first, count := pm.batch(t, pid)
	last := LastSeq(first, count)
	if want := modelLastSeq(first, count); last != want {
		t.Fatalf("LastSeq(%d, %d) = %d, want %d", first, count, last, want)
	}
	gotV, gotB := pm.real.Check(pid, epoch, first, last)
	wantV, wantB := pm.model.check(pid, epoch, first, last)
	if gotV != wantV || gotB != wantB {
		t.Fatalf("Check(pid %d, epoch %d, seq %d..%d) = %v %+v, model says %v %+v", pid, epoch, first, last, gotV, gotB, wantV, wantB)
	}
	if gotV == Accept {
		pm.recordBoth(pid, epoch, first, last)
	}
}

// Replicate is what a follower does: record whatever the log holds,
// without asking (here: a batch at any sequence, as a log written by an
// older version or under another leader might hold), so that sequences
// near the wrap are reached.
func (pm *producerMachine) Replicate(t *rapid.T) {
	pid := pm.pid(t)
	epoch, first, count := pm.batch(t, pid)
	if rapid.Bool().Draw(t, "nearWrap") {
		first = rapid.Int32Range(math.MaxInt32-10, math.MaxInt32).Draw(t, "wrapFirst")
	}
	pm.recordBoth(pid, epoch, first, LastSeq(first, count))
}

func (pm *producerMachine) recordBoth(pid int64, epoch int16, first, last int32) {
	pm.index++
	b := SeqBatch{FirstSeq: first, LastSeq: last, BaseOffset: pm.offset, Index: pm.index, Term: pm.index % 3}
	pm.offset += 10
	pm.real.Record(pid, epoch, b)
	pm.model.record(pid, epoch, b)
}

// CloneIsDeep: changing a clone leaves the original alone.
func (pm *producerMachine) CloneIsDeep(t *rapid.T) {
	before := EncodeCheckpoint(Checkpoint{Producers: pm.real})
	c := pm.real.Clone()
	if got := EncodeCheckpoint(Checkpoint{Producers: c}); string(got) != string(before) {
		t.Fatalf("clone differs from original")
	}
	for _, id := range c.IDs() {
		st, _ := c.Get(id)
		c.Record(id, st.Epoch, SeqBatch{FirstSeq: 99, LastSeq: 99, BaseOffset: -7})
		c.Record(id+1, st.Epoch+1, SeqBatch{FirstSeq: 0, LastSeq: 0})
	}
	if got := EncodeCheckpoint(Checkpoint{Producers: pm.real}); string(got) != string(before) {
		t.Fatalf("recording on the clone changed the original")
	}
}

func (pm *producerMachine) Check(t *rapid.T) {
	ids := pm.real.IDs()
	if len(ids) != len(pm.model) || pm.real.Len() != len(pm.model) {
		t.Fatalf("%d producers (Len %d), model has %d", len(ids), pm.real.Len(), len(pm.model))
	}
	for i, id := range ids {
		if i > 0 && ids[i-1] >= id {
			t.Fatalf("IDs not sorted: %v", ids)
		}
		st, ok := pm.real.Get(id)
		m := pm.model[id]
		if !ok || m == nil {
			t.Fatalf("producer %d: real %v, model %v", id, ok, m != nil)
		}
		want := pm.model.remembered(id)
		if st.Epoch != m.epoch || fmt.Sprint(st.Batches) != fmt.Sprint(want) {
			t.Fatalf("producer %d: epoch %d batches %v; model epoch %d batches %v", id, st.Epoch, st.Batches, m.epoch, want)
		}
		// Get returns a copy.
		if len(st.Batches) > 0 {
			st.Batches[0].BaseOffset = -99
			again, _ := pm.real.Get(id)
			if again.Batches[0].BaseOffset == -99 {
				t.Fatalf("Get shares its batches with the table")
			}
		}
	}
}

func TestProducersMatchModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pm := &producerMachine{real: NewProducers(), model: modelProducers{}}
		t.Repeat(rapid.StateMachineActions(pm))
	})
}

// Scenarios named after the rules in kafka-notes.md, for a reader who wants
// them spelled out.
func TestProducerRules(t *testing.T) {
	ps := NewProducers()
	expect := func(epoch int16, first, last int32, want Verdict) SeqBatch {
		t.Helper()
		v, b := ps.Check(42, epoch, first, last)
		if v != want {
			t.Fatalf("Check(epoch %d, %d..%d) = %v, want %v", epoch, first, last, v, want)
		}
		return b
	}
	expect(0, 5, 9, OutOfOrder) // unknown producer must start at 0
	expect(0, 0, 4, Accept)
	ps.Record(42, 0, SeqBatch{FirstSeq: 0, LastSeq: 4, BaseOffset: 100})
	if b := expect(0, 0, 4, Duplicate); b.BaseOffset != 100 {
		t.Fatalf("duplicate answered with offset %d, want the original 100", b.BaseOffset)
	}
	expect(0, 0, 3, OutOfOrder) // same first, different last: not a duplicate
	expect(0, 6, 6, OutOfOrder) // a gap
	expect(0, 5, 5, Accept)
	for i := int32(1); i <= 5; i++ {
		ps.Record(42, 0, SeqBatch{FirstSeq: 5*i - 0, LastSeq: 5*i + 4, BaseOffset: 100 + int64(i)})
	}
	expect(0, 0, 4, OutOfOrder) // the sixth batch back is forgotten
	expect(0, 5, 9, Duplicate)  // the fifth is still remembered
	expect(1, 30, 30, OutOfOrder)
	expect(1, 0, 0, Accept) // a new epoch starts at 0
	ps.Record(42, 1, SeqBatch{FirstSeq: 0, LastSeq: 0})
	expect(0, 30, 30, Fenced)

	// Wrap at MaxInt32.
	ps.Record(7, 3, SeqBatch{FirstSeq: math.MaxInt32 - 1, LastSeq: math.MaxInt32})
	v, _ := ps.Check(7, 3, 0, 2)
	if v != Accept {
		t.Fatalf("sequence after MaxInt32: %v, want Accept", v)
	}
	if got := LastSeq(math.MaxInt32, 3); got != 1 {
		t.Fatalf("LastSeq(MaxInt32, 3) = %d, want 1", got)
	}
}
