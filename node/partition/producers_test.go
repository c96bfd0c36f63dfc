package partition

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// modelProducers is an obviously-correct reading of docs/kafka-notes.md,
// "Idempotent producer, broker side", and of Kafka's producer expiry on the
// log's time: per producer id, the epoch, every batch recorded in it (the
// model never forgets a batch; it looks at the last five when asked) and
// the log's time when it last wrote. Expiry scans every producer.
type modelProducers struct {
	byID  map[int64]*modelProducer
	nowMs int64 // largest timestamp observed, -1 before any
	expMs int64
}

type modelProducer struct {
	epoch   int16
	batches []SeqBatch
	lastMs  int64
}

func newModelProducers() *modelProducers {
	return &modelProducers{byID: map[int64]*modelProducer{}, nowMs: -1, expMs: DefaultProducerIDExpirationMs}
}

const seqSpace = int64(math.MaxInt32) + 1 // sequences live in [0, MaxInt32] and wrap

func modelLastSeq(first, count int32) int32 {
	return int32((int64(first) + int64(count) - 1) % seqSpace)
}

func modelNext(seq int32) int32 { return int32((int64(seq) + 1) % seqSpace) }

func (m *modelProducers) remembered(pid int64) []SeqBatch {
	st := m.byID[pid]
	if st == nil {
		return nil
	}
	if n := len(st.batches); n > 5 {
		return st.batches[n-5:]
	}
	return st.batches
}

// expired: idle for the expiry or longer at log time now, once the log
// has a time at all (big.Int-free: the model's timestamps stay small).
func (m *modelProducers) expired(st *modelProducer, now int64) bool {
	return m.nowMs >= 0 && now >= 0 && now-st.lastMs >= m.expMs
}

func (m *modelProducers) check(pid int64, epoch int16, first, last int32, ts int64) (Verdict, SeqBatch) {
	st := m.byID[pid]
	if st == nil || m.expired(st, max(m.nowMs, ts)) {
		// Never seen, or forgotten: any sequence may start (Kafka 2.5+).
		return Accept, SeqBatch{}
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

func (m *modelProducers) observe(ts int64) {
	if ts <= m.nowMs {
		return
	}
	if m.nowMs < 0 {
		for _, st := range m.byID { //floe:unordered every producer gets the same value
			st.lastMs = ts
		}
	}
	m.nowMs = ts
	m.expireAll()
}

func (m *modelProducers) setExpiration(ms int64) {
	m.expMs = ms
	m.expireAll()
}

func (m *modelProducers) expireAll() {
	for pid, st := range m.byID { //floe:unordered deleting each expired producer; order cannot matter
		if m.expired(st, m.nowMs) {
			delete(m.byID, pid)
		}
	}
}

func (m *modelProducers) record(pid int64, epoch int16, b SeqBatch) {
	st := m.byID[pid]
	if st == nil || st.epoch != epoch {
		st = &modelProducer{epoch: epoch}
		m.byID[pid] = st
	}
	st.batches = append(st.batches, b)
	st.lastMs = m.nowMs
}

// producerMachine drives Producers and the model with the same calls.
type producerMachine struct {
	real   *Producers
	model  *modelProducers
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
	st := pm.model.byID[pid]
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

// timestamp draws a batch's max timestamp: mostly near the log's time
// (earlier, the same, a little or a lot later than the expiry), sometimes
// none.
func (pm *producerMachine) timestamp(t *rapid.T) int64 {
	if rapid.IntRange(0, 9).Draw(t, "untimed") == 0 {
		return -1
	}
	base := max(pm.model.nowMs, 1000)
	return base + rapid.OneOf(rapid.Int64Range(-20, 20), rapid.Int64Range(0, 3*pm.model.expMs)).Draw(t, "step")
}

// Produce is what a leader does: check, and record only what is accepted.
func (pm *producerMachine) Produce(t *rapid.T) {
	pid := pm.pid(t)
	epoch, first, count := pm.batch(t, pid)
	ts := pm.timestamp(t)
	last := LastSeq(first, count)
	if want := modelLastSeq(first, count); last != want {
		t.Fatalf("LastSeq(%d, %d) = %d, want %d", first, count, last, want)
	}
	gotV, gotB := pm.real.Check(pid, epoch, first, last, ts)
	wantV, wantB := pm.model.check(pid, epoch, first, last, ts)
	if gotV != wantV || gotB != wantB {
		t.Fatalf("Check(pid %d, epoch %d, seq %d..%d, ts %d) = %v %+v, model says %v %+v", pid, epoch, first, last, ts, gotV, gotB, wantV, wantB)
	}
	if gotV == Accept {
		pm.recordBoth(pid, epoch, first, last, ts)
	}
}

// Untimed traffic (a batch without producer id) moves the log's time.
func (pm *producerMachine) Observe(t *rapid.T) {
	ts := pm.timestamp(t)
	pm.real.Observe(ts)
	pm.model.observe(ts)
}

// The log changes producer.id.expiration.ms (EntryProducerExpiry).
func (pm *producerMachine) SetExpiration(t *rapid.T) {
	ms := rapid.Int64Range(1, 60).Draw(t, "expirationMs")
	pm.real.SetExpiration(ms)
	pm.model.setExpiration(ms)
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
	pm.recordBoth(pid, epoch, first, LastSeq(first, count), pm.timestamp(t))
}

// recordBoth applies a batch stamped ts as every replica does: Observe,
// then Record.
func (pm *producerMachine) recordBoth(pid int64, epoch int16, first, last int32, ts int64) {
	pm.index++
	b := SeqBatch{FirstSeq: first, LastSeq: last, BaseOffset: pm.offset, Index: pm.index, Term: pm.index % 3}
	pm.offset += 10
	pm.real.Observe(ts)
	pm.model.observe(ts)
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
	checkTableInvariants(t, pm.real)
	if pm.real.NowMs() != pm.model.nowMs || pm.real.Expiration() != pm.model.expMs {
		t.Fatalf("log time %d, expiry %d; model %d, %d", pm.real.NowMs(), pm.real.Expiration(), pm.model.nowMs, pm.model.expMs)
	}
	ids := pm.real.IDs()
	if len(ids) != len(pm.model.byID) || pm.real.Len() != len(pm.model.byID) {
		t.Fatalf("%d producers (Len %d), model has %d", len(ids), pm.real.Len(), len(pm.model.byID))
	}
	for i, id := range ids {
		if i > 0 && ids[i-1] >= id {
			t.Fatalf("IDs not sorted: %v", ids)
		}
		st, ok := pm.real.Get(id)
		m := pm.model.byID[id]
		if !ok || m == nil {
			t.Fatalf("producer %d: real %v, model %v", id, ok, m != nil)
		}
		want := pm.model.remembered(id)
		if st.Epoch != m.epoch || fmt.Sprint(st.Batches) != fmt.Sprint(want) || st.LastMs != m.lastMs {
			t.Fatalf("producer %d: epoch %d batches %v last %d; model epoch %d batches %v last %d",
				id, st.Epoch, st.Batches, st.LastMs, m.epoch, want, m.lastMs)
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
		pm := &producerMachine{real: NewProducers(), model: newModelProducers()}
		// A short expiry, so that the clock steps reach it.
		exp := rapid.Int64Range(1, 60).Draw(t, "expirationMs")
		pm.real.SetExpiration(exp)
		pm.model.setExpiration(exp)
		t.Repeat(rapid.StateMachineActions(pm))
	})
}

// Scenarios named after the rules in docs/kafka-notes.md, for a reader who wants
// them spelled out.
func TestProducerRules(t *testing.T) {
	ps := NewProducers()
	expect := func(epoch int16, first, last int32, want Verdict) SeqBatch {
		t.Helper()
		v, b := ps.Check(42, epoch, first, last, -1)
		if v != want {
			t.Fatalf("Check(epoch %d, %d..%d) = %v, want %v", epoch, first, last, v, want)
		}
		return b
	}
	expect(0, 5, 9, Accept) // an unknown producer may start anywhere (Kafka 2.5+)
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
	v, _ := ps.Check(7, 3, 0, 2, -1)
	if v != Accept {
		t.Fatalf("sequence after MaxInt32: %v, want Accept", v)
	}
	if got := LastSeq(math.MaxInt32, 3); got != 1 {
		t.Fatalf("LastSeq(MaxInt32, 3) = %d, want 1", got)
	}
}

// checkTableInvariants checks Producers' invariants: the expiry list holds
// exactly the table's entries, linked both ways, in non-decreasing LastMs,
// none expired.
func checkTableInvariants(t tb, ps *Producers) {
	t.Helper()
	n := 0
	var prev *producerEntry
	for e := ps.oldest; e != nil; prev, e = e, e.next {
		n++
		if e.prev != prev {
			t.Fatalf("producer %d: back link broken", e.id)
		}
		if ps.byID[e.id] != e {
			t.Fatalf("producer %d listed but not in the table", e.id)
		}
		if prev != nil && prev.st.LastMs > e.st.LastMs {
			t.Fatalf("expiry order broken: %d (last %d) before %d (last %d)", prev.id, prev.st.LastMs, e.id, e.st.LastMs)
		}
		if ps.expiredAt(e.st.LastMs, ps.nowMs) {
			t.Fatalf("producer %d (last %d) expired at log time %d with expiry %d", e.id, e.st.LastMs, ps.nowMs, ps.expirationMs)
		}
		if ps.nowMs >= 0 && e.st.LastMs < 0 {
			t.Fatalf("producer %d has no time though the log has one", e.id)
		}
	}
	if ps.newest != prev || n != len(ps.byID) {
		t.Fatalf("list of %d ends at %v, table has %d", n, prev, len(ps.byID))
	}
}

// Expiry on the log's time: the rules spelled out.
func TestProducerExpiryRules(t *testing.T) {
	ps := NewProducers()
	ps.SetExpiration(100)
	ps.Record(1, 0, SeqBatch{FirstSeq: 0, LastSeq: 0}) // before any time: counts from the first
	ps.Observe(-1)                                     // untimed batches do not start the clock
	if ps.NowMs() != -1 {
		t.Fatalf("log time %d after an untimed batch", ps.NowMs())
	}
	ps.Observe(1000)
	ps.Record(2, 0, SeqBatch{FirstSeq: 0, LastSeq: 0})
	ps.Observe(1050)
	ps.Record(3, 0, SeqBatch{FirstSeq: 0, LastSeq: 0})
	ps.Observe(900) // an older timestamp does not move the time back
	if ps.NowMs() != 1050 {
		t.Fatalf("log time %d, want 1050", ps.NowMs())
	}
	// At 1099 nobody is idle for 100 yet; producer 1's batch would make it
	// 1100 and expire 1 and 2: Check judges producer 2 unknown already.
	ps.Observe(1099)
	if ps.Len() != 3 {
		t.Fatalf("%d producers at 1099, want 3", ps.Len())
	}
	if v, _ := ps.Check(2, 0, 0, 0, 1100); v != Accept {
		t.Fatalf("retry of an expiring producer's batch: %v, want Accept (it is forgotten at 1100)", v)
	}
	if v, b := ps.Check(2, 0, 0, 0, 1099); v != Duplicate || b.FirstSeq != 0 {
		t.Fatalf("retry before expiry: %v, want Duplicate", v)
	}
	ps.Observe(1100)
	if _, ok := ps.Get(1); ok {
		t.Fatalf("producer 1 still known at 1100")
	}
	if _, ok := ps.Get(3); !ok || ps.Len() != 1 {
		t.Fatalf("want only producer 3 at 1100, have %v", ps.IDs())
	}
	// A shorter expiry applies at once; a longer one keeps who is left.
	ps.SetExpiration(50)
	if ps.Len() != 0 {
		t.Fatalf("producer 3 (last 1050) survived a 50 ms expiry at 1100")
	}
	checkTableInvariants(t, ps)
}
