package partition

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/node/records"
)

func mustAppend(t *testing.T, r *rig, pid int64, epoch int16, seq int32, n int) AppendResult {
	t.Helper()
	res, err := r.produce(pid, epoch, seq, n)
	if err != nil {
		t.Fatalf("append pid %d epoch %d seq %d: %v", pid, epoch, seq, err)
	}
	return res
}

func expectErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

func TestFollowerRefusesWrites(t *testing.T) {
	r := newRig(t, DefaultConfig())
	r.drive()
	if r.p.IsLeader() || r.p.Ready() {
		t.Fatalf("leader before any election")
	}
	_, err := r.produce(-1, 0, 0, 1)
	expectErr(t, err, kerr.NotLeaderForPartition)
	_, _, err = r.p.ProposeStartOffset(1)
	expectErr(t, err, kerr.NotLeaderForPartition)
}

// Offsets are assigned in order, a batch is acknowledged only once
// committed, and the high watermark and reads follow commits.
func TestAppendCommitRead(t *testing.T) {
	r := newRig(t, DefaultConfig())
	r.lead()
	term := r.p.Term()
	if r.p.Leader() != 1 || term < 2 {
		t.Fatalf("leader %d term %d", r.p.Leader(), term)
	}
	sizes := []int{2, 1, 3}
	var results []AppendResult
	var waits []*waitResult
	var next int64
	for _, n := range sizes {
		res := mustAppend(t, r, -1, 0, 0, n)
		if res.BaseOffset != next || res.Duplicate || res.Term != term {
			t.Fatalf("append of %d records: %+v, want base %d in term %d", n, res, next, term)
		}
		next += int64(n)
		results = append(results, res)
		waits = append(waits, r.wait(res))
	}
	if hw := r.p.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d before anything committed", hw)
	}
	for i, w := range waits {
		if w.calls != 0 {
			t.Fatalf("batch %d acknowledged before commit", i)
		}
	}
	r.drive()
	for i, w := range waits {
		if w.calls != 1 || w.err != nil {
			t.Fatalf("batch %d: %d calls, err %v; want one call with nil", i, w.calls, w.err)
		}
	}
	if hw := r.p.HighWatermark(); hw != next {
		t.Fatalf("high watermark %d, want %d", hw, next)
	}
	data, err := r.p.Read(0, 1<<20)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	bs, err := records.Split(data)
	if err != nil || len(bs) != len(sizes) {
		t.Fatalf("read %d batches (%v), want %d", len(bs), err, len(sizes))
	}
	for i, b := range bs {
		h, err := records.Verify(b)
		if err != nil {
			t.Fatalf("batch %d does not verify: %v", i, err)
		}
		if h.BaseOffset != results[i].BaseOffset || h.PartitionLeaderEpoch != int32(term) || int(h.RecordCount) != sizes[i] {
			t.Fatalf("batch %d: base %d epoch %d records %d; want %d, %d, %d", i, h.BaseOffset, h.PartitionLeaderEpoch, h.RecordCount,
				results[i].BaseOffset, term, sizes[i])
		}
	}
	if data, err := r.p.Read(next, 1<<20); err != nil || data != nil {
		t.Fatalf("read at the high watermark: %d bytes, %v; want nothing", len(data), err)
	}
	_, err = r.p.Read(next+1, 1<<20)
	expectErr(t, err, kerr.OffsetOutOfRange)
	_, err = r.p.Read(-1, 1<<20)
	expectErr(t, err, kerr.OffsetOutOfRange)

	// Waiting on an entry already applied answers at once.
	w := r.wait(results[0])
	if w.calls != 1 || w.err != nil {
		t.Fatalf("wait on an applied entry: %d calls, %v", w.calls, w.err)
	}
}

func TestIdempotentProduce(t *testing.T) {
	r := newRig(t, DefaultConfig())
	r.lead()
	first := mustAppend(t, r, 5, 0, 0, 3)
	// A retry before the original committed is a duplicate pointing at
	// the original's entry; both acknowledgements wait for its commit.
	dup := mustAppend(t, r, 5, 0, 0, 3)
	if !dup.Duplicate || dup.BaseOffset != first.BaseOffset || dup.Index != first.Index || dup.Term != first.Term {
		t.Fatalf("retry: %+v, want a duplicate of %+v", dup, first)
	}
	w1, w2 := r.wait(first), r.wait(dup)
	if w1.calls+w2.calls != 0 {
		t.Fatalf("acknowledged before commit")
	}
	r.drive()
	if w1.calls != 1 || w1.err != nil || w2.calls != 1 || w2.err != nil {
		t.Fatalf("original %+v, duplicate %+v; want both committed once", *w1, *w2)
	}
	if hw := r.p.HighWatermark(); hw != 3 {
		t.Fatalf("high watermark %d, want 3: the duplicate must not be appended", hw)
	}
	// A retry after commit still finds the original.
	again := mustAppend(t, r, 5, 0, 0, 3)
	if !again.Duplicate || again.BaseOffset != first.BaseOffset {
		t.Fatalf("late retry: %+v", again)
	}
	if w := r.wait(again); w.calls != 1 || w.err != nil {
		t.Fatalf("late retry wait: %+v", *w)
	}

	_, err := r.produce(5, 0, 4, 1) // a gap: 3 is next
	expectErr(t, err, kerr.OutOfOrderSequenceNumber)
	// An unknown producer may start at any sequence (Kafka 2.5+: it may
	// be one whose state expired).
	mustAppend(t, r, 6, 0, 1, 1)
	mustAppend(t, r, 5, 0, 3, 2)
	mustAppend(t, r, 5, 1, 0, 1) // new epoch
	_, err = r.produce(5, 0, 5, 1)
	expectErr(t, err, kerr.InvalidProducerEpoch)
	r.drive()
	if hw, next := r.p.HighWatermark(), r.log.NextOffset(); hw != 7 || next != 7 {
		t.Fatalf("high watermark %d, log next offset %d; want 7", hw, next)
	}
}

// Waiters complete in index order whatever order they were registered in;
// one whose entry turned out to be another (wrong term, or wrong base
// offset for a term-0 waiter) fails.
func TestWaitCommitOrderAndReplacement(t *testing.T) {
	r := newRig(t, DefaultConfig())
	r.lead()
	a := mustAppend(t, r, -1, 0, 0, 1)
	b := mustAppend(t, r, -1, 0, 0, 1)
	c := mustAppend(t, r, -1, 0, 0, 1)
	var order []string
	add := func(name string, index, term uint64, base int64) *waitResult {
		w := &waitResult{}
		r.p.WaitCommit(index, term, base, func(err error) { order = append(order, name); w.done(err) })
		return w
	}
	wc := add("c", c.Index, c.Term, c.BaseOffset)
	wa := add("a", a.Index, a.Term, a.BaseOffset)
	wb := add("b", b.Index, b.Term, b.BaseOffset)
	wrongTerm := add("b-wrong-term", b.Index, b.Term+5, b.BaseOffset)
	byBase := add("a-by-base", a.Index, 0, a.BaseOffset)
	wrongBase := add("a-wrong-base", a.Index, 0, a.BaseOffset+1)
	future := add("future", c.Index+10, c.Term, 99)
	r.drive()
	for name, w := range map[string]*waitResult{"a": wa, "b": wb, "c": wc, "a-by-base": byBase} {
		if w.calls != 1 || w.err != nil {
			t.Errorf("%s: %+v, want committed", name, *w)
		}
	}
	for name, w := range map[string]*waitResult{"b-wrong-term": wrongTerm, "a-wrong-base": wrongBase} {
		if w.calls != 1 || !errors.Is(w.err, kerr.NotLeaderForPartition) {
			t.Errorf("%s: %+v, want one NOT_LEADER", name, *w)
		}
	}
	if future.calls != 0 {
		t.Errorf("a waiter past the log end was called: %+v", *future)
	}
	pos := map[string]int{}
	for i, n := range order {
		pos[n] = i
	}
	if !(pos["a"] < pos["b"] && pos["b"] < pos["c"]) {
		t.Errorf("completion order %v: want a before b before c", order)
	}
	// Losing leadership fails what is still waiting, once.
	r.p.RoleChanged(2, false, r.p.Term()+1)
	if future.calls != 1 || !errors.Is(future.err, kerr.NotLeaderForPartition) {
		t.Errorf("waiter after losing leadership: %+v", *future)
	}
}

// Losing leadership fails waiters and refuses writes; the entries may still
// commit, and a retry on the new leader is answered from the log.
func TestRoleChangeFailsWaitersAndRebuildsPending(t *testing.T) {
	r := newRig(t, DefaultConfig())
	r.lead()
	term := r.p.Term()
	res := mustAppend(t, r, 9, 0, 0, 2)
	w := r.wait(res)
	mustSync := r.take() // the batch is in the log, not yet committed
	r.p.RoleChanged(0, false, term)
	if w.calls != 1 || !errors.Is(w.err, kerr.NotLeaderForPartition) {
		t.Fatalf("waiter after losing leadership: %+v", *w)
	}
	if r.p.IsLeader() || r.p.Ready() {
		t.Fatalf("still leader")
	}
	_, err := r.produce(9, 0, 2, 1)
	expectErr(t, err, kerr.NotLeaderForPartition)

	// Leader again: the pending table is rebuilt from the log, so the
	// uncommitted batch is known.
	r.p.RoleChanged(1, true, term)
	retry := mustAppend(t, r, 9, 0, 0, 2)
	if !retry.Duplicate || retry.Index != res.Index || retry.BaseOffset != res.BaseOffset || retry.Term != res.Term {
		t.Fatalf("retry after regaining leadership: %+v, want duplicate of %+v", retry, res)
	}
	next := mustAppend(t, r, 9, 0, 2, 1)
	if next.BaseOffset != 2 {
		t.Fatalf("next batch at %d, want 2", next.BaseOffset)
	}
	w2 := r.wait(retry)
	r.complete(mustSync)
	r.drive()
	if w.calls != 1 {
		t.Fatalf("first waiter called %d times", w.calls)
	}
	if w2.calls != 1 || w2.err != nil {
		t.Fatalf("retry's waiter: %+v", *w2)
	}
	if hw := r.p.HighWatermark(); hw != 3 {
		t.Fatalf("high watermark %d, want 3", hw)
	}
}

// Ready means "has committed an entry of its own term" (partition.go), so a
// leader re-elected in a newer term is not ready until it commits one.
// observeRole in node/tick.go calls RoleChanged(lead, true, newTerm) when
// the term moved between two Readies while the node stayed (or became
// again) leader.
func TestReadyResetOnNewTerm(t *testing.T) {
	r := newRig(t, DefaultConfig())
	r.lead()
	term := r.p.Term()
	r.p.RoleChanged(1, true, term+1)
	if r.p.Ready() {
		t.Fatalf("ready in term %d before committing an entry of that term", term+1)
	}
}

func TestDeleteRecordsStartOffset(t *testing.T) {
	r := newRig(t, DefaultConfig())
	r.lead()
	for i := 0; i < 5; i++ {
		mustAppend(t, r, -1, 0, 0, 1)
	}
	r.drive()
	index, term, err := r.p.ProposeStartOffset(3)
	if err != nil {
		t.Fatalf("propose start offset: %v", err)
	}
	w := &waitResult{}
	r.p.WaitCommit(index, term, -1, w.done)
	r.drive()
	if w.calls != 1 || w.err != nil {
		t.Fatalf("start offset wait: %+v", *w)
	}
	if s := r.p.StartOffset(); s != 3 {
		t.Fatalf("start offset %d, want 3", s)
	}
	_, err = r.p.Read(2, 1<<20)
	expectErr(t, err, kerr.OffsetOutOfRange)
	data, err := r.p.Read(3, 1<<20)
	if err != nil || len(data) == 0 {
		t.Fatalf("read at the start offset: %d bytes, %v", len(data), err)
	}
	if h, _ := records.ParseHeader(data); h.BaseOffset != 3 {
		t.Fatalf("first batch read at 3 has base %d", h.BaseOffset)
	}
	// Backwards is a no-op; past the high watermark is clamped to it.
	for _, off := range []int64{1, 100} {
		if _, _, err := r.p.ProposeStartOffset(off); err != nil {
			t.Fatalf("propose %d: %v", off, err)
		}
		r.drive()
	}
	if s := r.p.StartOffset(); s != 5 {
		t.Fatalf("start offset %d, want 5 (clamped to the high watermark)", s)
	}
	if data, err := r.p.Read(5, 1<<20); err != nil || data != nil {
		t.Fatalf("read at the end after deleting everything: %d bytes, %v", len(data), err)
	}
}

// A restart rebuilds the same state from the log, and a retry of a batch
// written before it is still answered with the original offset.
func TestRestartRebuildsState(t *testing.T) {
	r := newRig(t, DefaultConfig())
	r.lead()
	first := mustAppend(t, r, 3, 0, 0, 2)
	mustAppend(t, r, -1, 0, 0, 4)
	mustAppend(t, r, 3, 0, 2, 1)
	if _, _, err := r.p.ProposeStartOffset(1); err != nil {
		t.Fatal(err)
	}
	r.drive()
	cp, hw, start := r.p.Checkpoint(), r.p.HighWatermark(), r.p.StartOffset()
	r.restart()
	r.drive()
	if !bytes.Equal(r.p.Checkpoint(), cp) || r.p.HighWatermark() != hw || r.p.StartOffset() != start {
		t.Fatalf("after restart: hw %d start %d, want %d %d (checkpoint equal: %v)",
			r.p.HighWatermark(), r.p.StartOffset(), hw, start, bytes.Equal(r.p.Checkpoint(), cp))
	}
	r.lead()
	retry := mustAppend(t, r, 3, 0, 0, 2)
	if !retry.Duplicate || retry.BaseOffset != first.BaseOffset {
		t.Fatalf("retry after restart: %+v, want duplicate at %d", retry, first.BaseOffset)
	}
	next := mustAppend(t, r, 3, 0, 3, 1)
	if next.BaseOffset != hw {
		t.Fatalf("first append after restart at %d, want %d", next.BaseOffset, hw)
	}
}

// EpochEndOffset answers OffsetForLeaderEpoch with Raft terms as leader
// epochs: the offset after the last batch of the largest term at or below
// the one asked, and that term.
func TestEpochEndOffset(t *testing.T) {
	r := newRig(t, DefaultConfig())
	r.lead()
	t1 := r.p.Term()
	mustAppend(t, r, -1, 0, 0, 3)
	r.drive()
	r.restart()
	r.lead() // a term holding only the leader's empty entry
	t2 := r.p.Term()
	r.restart()
	r.lead()
	t3 := r.p.Term()
	mustAppend(t, r, -1, 0, 0, 2)
	r.drive()
	if !(1 < t1 && t1 < t2 && t2 < t3) {
		t.Fatalf("terms %d, %d, %d", t1, t2, t3)
	}
	tests := []struct {
		epoch      int32
		end        int64
		foundEpoch int32
	}{
		{0, -1, -1},               // before any entry
		{1, 0, 1},                 // the bootstrap term holds no batch
		{int32(t1), 3, int32(t1)}, // the first leader's batches end at 3
		{int32(t2), 3, int32(t2)}, // a term without batches ends where the last one did
		{int32(t3), 5, int32(t3)}, // the current term: the log end
	}
	for _, tc := range tests {
		end, found := r.p.EpochEndOffset(tc.epoch)
		if end != tc.end || found != tc.foundEpoch {
			t.Errorf("EpochEndOffset(%d) = %d, %d; want %d, %d", tc.epoch, end, found, tc.end, tc.foundEpoch)
		}
	}
}

func TestLogAppendTimeAndOffsetForTime(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LogAppendTime = true
	r := newRig(t, cfg)
	r.lead()
	for i := 0; i < 3; i++ {
		b, h := batch(-1, 0, 0, 2)
		if _, err := r.p.Append(b, h, r.now); err != nil {
			t.Fatal(err)
		}
		r.now = r.now.Add(time.Second)
	}
	if off := r.p.OffsetForTime(0); off != -1 {
		t.Fatalf("OffsetForTime before commit = %d, want -1", off)
	}
	r.drive()
	data, err := r.p.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	bs, _ := records.Split(data)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	for i, b := range bs {
		h, err := records.Verify(b)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		want := start + int64(i)*1000
		if !h.HasLogAppendTime() || h.MaxTimestamp != want {
			t.Fatalf("batch %d: log append time %v, max timestamp %d; want %d", i, h.HasLogAppendTime(), h.MaxTimestamp, want)
		}
	}
	for _, tc := range []struct {
		ts   int64
		want int64
	}{{0, 0}, {start, 0}, {start + 1, 2}, {start + 1000, 2}, {start + 2000, 4}, {start + 2001, -1}} {
		if got := r.p.OffsetForTime(tc.ts); got != tc.want {
			t.Errorf("OffsetForTime(%d) = %d, want %d", tc.ts, got, tc.want)
		}
	}
}

// A new leader that cannot read its log's uncommitted tail must not judge
// sequences without it: a client's retry of a batch in that tail would be
// taken for a new batch and written twice (sim seed 100059, a read fault
// while rebuilding the producer table). It refuses with
// KAFKA_STORAGE_ERROR until the log reads again, then answers the retry as
// the duplicate it is.
func TestLeaderUnableToReadItsTailRefusesInsteadOfDuplicating(t *testing.T) {
	r := newRig(t, DefaultConfig())
	r.lead()
	term := r.p.Term()
	first := mustAppend(t, r, 9, 0, 0, 2)
	mustSync := r.take() // in the log, not committed
	r.p.RoleChanged(0, false, term)

	r.fs.SetFailProb(logstore.OpRead, 1) // the disk fails every read
	r.p.RoleChanged(1, true, term)       // so the rebuild cannot read the tail
	_, err := r.produce(9, 0, 0, 2)
	r.fs.SetFailProb(logstore.OpRead, 0)
	if !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("retry while the tail is unreadable: err %v, want KAFKA_STORAGE_ERROR (not a new append)", err)
	}
	retry := mustAppend(t, r, 9, 0, 0, 2) // the disk reads again
	if !retry.Duplicate || retry.BaseOffset != first.BaseOffset || retry.Index != first.Index {
		t.Fatalf("retry once the log reads: %+v, want the duplicate of %+v", retry, first)
	}
	r.complete(mustSync)
	r.drive()
	if hw := r.p.HighWatermark(); hw != 2 {
		t.Fatalf("high watermark %d, want 2 (the batch once)", hw)
	}
}
