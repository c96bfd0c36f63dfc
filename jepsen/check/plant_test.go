package check

import (
	"testing"

	"github.com/floe-broker/floe/jepsen/history"
)

// Each test plants one anomaly in a clean generated history and asserts
// the checker made for it reports it.

func clone(h history.History) history.History {
	out := make(history.History, len(h))
	for i, op := range h {
		op.Records = append([]history.Record(nil), op.Records...)
		op.Offsets = append([]history.Offset(nil), op.Offsets...)
		op.HWMs = append([]history.Offset(nil), op.HWMs...)
		out[i] = op
	}
	return out
}

func cleanHistory(t *testing.T, seed int64) history.History {
	t.Helper()
	h := newGen(defaultGen(seed)).run()
	mustValid(t, h, Options{Checkers: []string{LostWrite, Duplicate, InconsistentOffsets, PollOrder, Unseen}})
	return clone(h)
}

// ackedProduce returns the completion of an acknowledged produce.
func ackedProduce(t *testing.T, h history.History) history.Op {
	t.Helper()
	for _, op := range h {
		if op.F == history.Produce && op.Type == history.OK {
			return op
		}
	}
	t.Fatal("no acknowledged produce")
	return history.Op{}
}

func finalRead(h history.History, tp history.TP) int {
	for i, op := range h {
		if op.F == history.Read && op.Type == history.OK && len(op.HWMs) > 0 && op.HWMs[0].TP() == tp {
			return i
		}
	}
	return -1
}

func wantAnomaly(t *testing.T, h history.History, checker, anomaly, value string) Result {
	t.Helper()
	rep := Check(h, Options{})
	r, ok := rep.Result(checker)
	if !ok || r.Valid != Invalid || r.Counts[anomaly] == 0 {
		t.Fatalf("%s did not report %s:\n%s", checker, anomaly, rep.Summary())
	}
	if rep.Valid != Invalid {
		t.Fatalf("report valid %s despite %s", rep.Valid, anomaly)
	}
	if value != "" {
		found := false
		for _, d := range r.Anomalies[anomaly] {
			found = found || d.Value == value
		}
		if !found {
			t.Fatalf("%s reported, but not for value %q: %v", anomaly, value, r.Anomalies[anomaly])
		}
	}
	return r
}

func plantLostWrite(t *testing.T, h history.History) history.History {
	h = clone(h)
	ack := ackedProduce(t, h)
	rec := ack.Records[0]
	i := finalRead(h, rec.TP())
	var kept []history.Record
	for _, r := range h[i].Records {
		if r.Value != rec.Value {
			kept = append(kept, r)
		}
	}
	h[i].Records = kept
	return h
}

func TestPlantedLostWrite(t *testing.T) {
	h := cleanHistory(t, 11)
	ack := ackedProduce(t, h)
	wantAnomaly(t, plantLostWrite(t, h), LostWrite, LostWrite, ack.Records[0].Value)
	wantAnomaly(t, plantLostWrite(t, h), LinearizableLog, anomalyNonlinearLog, "")
}

func TestPlantedDuplicate(t *testing.T) {
	h := cleanHistory(t, 12)
	rec := ackedProduce(t, h).Records[0]
	i := finalRead(h, rec.TP())
	hwm := h[i].HWMs[0].Offset
	rec.Offset = hwm
	h[i].Records = append(h[i].Records, rec)
	h[i].HWMs[0].Offset = hwm + 1
	wantAnomaly(t, h, Duplicate, Duplicate, rec.Value)
}

func TestNonIdempotentDuplicateAllowed(t *testing.T) {
	h := cleanHistory(t, 12)
	rec := ackedProduce(t, h).Records[0]
	for i := range h {
		if h[i].F == history.Produce && h[i].Type == history.Invoke && h[i].Records[0].Value == rec.Value {
			h[i].NotIdempotent = true
		}
	}
	i := finalRead(h, rec.TP())
	rec.Offset = h[i].HWMs[0].Offset
	h[i].Records = append(h[i].Records, rec)
	h[i].HWMs[0].Offset++
	rep := Check(h, Options{Checkers: []string{Duplicate}})
	if rep.Valid != Valid {
		t.Fatalf("a non-idempotent producer's duplicate was reported:\n%s", rep.Summary())
	}
}

// aPoll returns the index of an ok poll with at least n records of one
// partition, and that partition.
func aPoll(t *testing.T, h history.History, n int) (int, history.TP) {
	t.Helper()
	for i, op := range h {
		if op.F != history.Poll || op.Type != history.OK {
			continue
		}
		count := map[history.TP]int{}
		for _, r := range op.Records {
			count[r.TP()]++
			if count[r.TP()] >= n {
				return i, r.TP()
			}
		}
	}
	t.Fatalf("no poll with %d records of one partition", n)
	return 0, history.TP{}
}

func TestPlantedInconsistentOffsets(t *testing.T) {
	h := cleanHistory(t, 13)
	i, tp := aPoll(t, h, 2)
	var same []int
	for j, r := range h[i].Records {
		if r.TP() == tp {
			same = append(same, j)
		}
	}
	a, b := &h[i].Records[same[0]], &h[i].Records[same[1]]
	a.Value, b.Value = b.Value, a.Value
	wantAnomaly(t, h, InconsistentOffsets, InconsistentOffsets, "")
}

// A fetch that returns a value other than the log's at an offset fits no
// linearization either.
func TestPlantedWrongFetchValue(t *testing.T) {
	h := cleanHistory(t, 13)
	for i, op := range h {
		if op.F == history.Fetch && op.Type == history.OK && len(op.Records) > 0 {
			other := ackedProduce(t, h).Records[0].Value
			if other == op.Records[0].Value {
				continue
			}
			h[i].Records[0].Value = other
			wantAnomaly(t, h, InconsistentOffsets, InconsistentOffsets, "")
			wantAnomaly(t, h, LinearizableLog, anomalyNonlinearLog, "")
			return
		}
	}
	t.Fatal("no fetch with records")
}

func TestPlantedUnexpectedValue(t *testing.T) {
	h := cleanHistory(t, 14)
	i, _ := aPoll(t, h, 1)
	h[i].Records[0].Value = "corrupt"
	wantAnomaly(t, h, UnexpectedValue, UnexpectedValue, "corrupt")
}

func TestPlantedNonmonotonicPoll(t *testing.T) {
	h := cleanHistory(t, 15)
	i, tp := aPoll(t, h, 2)
	var recs []history.Record
	for _, r := range h[i].Records {
		if r.TP() == tp {
			recs = append([]history.Record{r}, recs...) // reversed
		}
	}
	h[i].Records = recs
	wantAnomaly(t, h, PollOrder, anomalyNonmonotonic, "")
}

func TestPlantedPollSkip(t *testing.T) {
	h := cleanHistory(t, 16)
	i, tp := aPoll(t, h, 3)
	var recs []history.Record
	n := 0
	for _, r := range h[i].Records {
		if r.TP() == tp {
			n++
			if n == 2 {
				continue // drop the middle one
			}
		}
		recs = append(recs, r)
	}
	h[i].Records = recs
	wantAnomaly(t, h, PollOrder, anomalyPollSkip, "")
}

func TestPlantedUnseen(t *testing.T) {
	h := cleanHistory(t, 17)
	v := ackedProduce(t, h).Records[0].Value
	for i := range h {
		if h[i].F != history.Poll && h[i].F != history.Fetch {
			continue
		}
		var kept []history.Record
		for _, r := range h[i].Records {
			if r.Value != v {
				kept = append(kept, r)
			}
		}
		h[i].Records = kept
	}
	wantAnomaly(t, h, Unseen, Unseen, v)
}

// staleFetch turns a fetch that began after an acknowledged produce of its
// partition ended into one that saw an empty log.
func staleFetch(t *testing.T, h history.History) history.History {
	t.Helper()
	acked := map[history.TP]bool{}
	inv := map[int64]history.Op{}
	for i, op := range h {
		if op.F == history.Produce && op.Type == history.OK {
			acked[op.Records[0].TP()] = true
		}
		if op.F == history.Fetch && op.Type == history.Invoke {
			inv[op.Process] = op
		}
		if op.F == history.Fetch && op.Type == history.OK && acked[inv[op.Process].Offsets[0].TP()] {
			h[i].Records, h[i].HWMs[0].Offset = nil, 0
			return h
		}
	}
	t.Fatal("no fetch after an acknowledged produce")
	return nil
}

func TestPlantedHWMRegression(t *testing.T) {
	h := staleFetch(t, cleanHistory(t, 18))
	wantAnomaly(t, h, HWMRegression, HWMRegression, "")
	wantAnomaly(t, h, LinearizableLog, anomalyNonlinearLog, "")
	rep := Check(h, Options{StaleFetches: true, Checkers: []string{LinearizableLog}})
	if rep.Valid != Valid {
		t.Fatalf("with StaleFetches a stale fetch is allowed:\n%s", rep.Summary())
	}
}

func TestPlantedCommittedRegression(t *testing.T) {
	h := cleanHistory(t, 19)
	// The last offset fetch that read a committed offset now reads "none".
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].F != history.FetchOffset || h[i].Type != history.OK {
			continue
		}
		for j, o := range h[i].Offsets {
			if o.Offset > 0 {
				h[i].Offsets[j].Offset = history.NoOffset
				wantAnomaly(t, h, CommittedRegression, CommittedRegression, "")
				wantAnomaly(t, h, LinearizableOffsets, anomalyNonlinearOffs, "")
				return
			}
		}
	}
	t.Fatal("no offset fetch read a committed offset")
}

// hist builds small hand-written histories: it numbers and times events.
func hist(ops ...history.Op) history.History {
	for i := range ops {
		ops[i].Index, ops[i].Time = int64(i), int64(10*i)
	}
	return ops
}

func rec(off int64, v string) history.Record {
	return history.Record{Topic: "t", Partition: 0, Offset: off, Value: v}
}

func produce(p int64, typ history.Type, r history.Record) history.Op {
	return history.Op{Process: p, Type: typ, F: history.Produce, Records: []history.Record{r}}
}

func final(p int64, typ history.Type, hwm int64, recs ...history.Record) history.Op {
	op := history.Op{Process: p, Type: typ, F: history.Read, Offsets: []history.Offset{{Topic: "t", Offset: 0}}}
	if typ == history.OK {
		op.Records, op.HWMs, op.Offsets = recs, []history.Offset{{Topic: "t", Offset: hwm}}, nil
	}
	return op
}

// Only Porcupine sees this one: two produces that did not overlap were
// given offsets in the opposite order of real time.
func TestLogOrderAgainstRealTime(t *testing.T) {
	h := hist(
		produce(1, history.Invoke, rec(-1, "a")),
		produce(1, history.OK, rec(1, "a")),
		produce(2, history.Invoke, rec(-1, "b")),
		produce(2, history.OK, rec(0, "b")),
		final(3, history.Invoke, 0),
		final(3, history.OK, 2, rec(0, "b"), rec(1, "a")),
	)
	rep := Check(h, Options{})
	for _, r := range rep.Results {
		want := Valid
		if r.Checker == LinearizableLog {
			want = Invalid
		}
		if r.Valid != want {
			t.Errorf("%s: %s, want %s", r.Checker, r.Valid, want)
		}
	}
	// The same produces overlapping in time are fine.
	h2 := hist(h[0], h[2], h[1], h[3], h[4], h[5])
	if rep := Check(h2, Options{}); rep.Valid != Valid {
		t.Errorf("concurrent produces: %s", rep.Summary())
	}
}

func TestUncertainProducesMayHaveHappened(t *testing.T) {
	for _, typ := range []history.Type{history.Info, history.Fail} {
		landed := hist(
			produce(1, history.Invoke, rec(-1, "a")),
			produce(1, typ, rec(-1, "a")),
			produce(2, history.Invoke, rec(-1, "b")),
			produce(2, history.OK, rec(0, "b")),
			final(3, history.Invoke, 0),
			final(3, history.OK, 2, rec(0, "b"), rec(1, "a")),
		)
		if rep := Check(landed, Options{}); rep.Valid != Valid {
			t.Errorf("%s produce that landed later: %s", typ, rep.Summary())
		}
		vanished := hist(landed[0], landed[1], landed[2], landed[3], landed[4], final(3, history.OK, 1, rec(0, "b")))
		if rep := Check(vanished, Options{}); rep.Valid != Valid {
			t.Errorf("%s produce that never landed: %s", typ, rep.Summary())
		}
	}
}

func TestNotDurableLossIsAllowed(t *testing.T) {
	p := produce(1, history.Invoke, rec(-1, "a"))
	p.NotDurable = true
	h := hist(p, produce(1, history.OK, rec(0, "a")), final(3, history.Invoke, 0), final(3, history.OK, 0))
	if rep := Check(h, Options{}); rep.Valid != Valid {
		t.Errorf("lost acks=1 produce reported: %s", rep.Summary())
	}
	h[0].NotDurable = false
	wantAnomaly(t, h, LostWrite, LostWrite, "a")
}

func commit(p int64, typ history.Type, off int64) history.Op {
	return history.Op{Process: p, Type: typ, F: history.Commit, Group: "g", Offsets: []history.Offset{{Topic: "t", Offset: off}}}
}

func fetchOffset(p int64, typ history.Type, off int64) history.Op {
	return history.Op{Process: p, Type: typ, F: history.FetchOffset, Group: "g", Offsets: []history.Offset{{Topic: "t", Offset: off}}}
}

// A read of an older commit after a newer one completed is not linearizable,
// though no two reads go backwards: only Porcupine sees it.
func TestCommittedOffsetsRegister(t *testing.T) {
	h := hist(
		commit(1, history.Invoke, 5), commit(1, history.OK, 5),
		commit(1, history.Invoke, 7), commit(1, history.OK, 7),
		fetchOffset(2, history.Invoke, -1), fetchOffset(2, history.OK, 5),
	)
	rep := Check(h, Options{})
	if r, _ := rep.Result(LinearizableOffsets); r.Valid != Invalid {
		t.Errorf("stale committed offset: %s", rep.Summary())
	}
	if r, _ := rep.Result(CommittedRegression); r.Valid != Valid {
		t.Errorf("regression checker needs two reads: %s", rep.Summary())
	}
	// An info commit of 5 that may land late explains the read.
	h2 := hist(h[0], h[1], h[2], h[3], commit(3, history.Invoke, 5), commit(3, history.Info, 5), h[4], h[5])
	if rep := Check(h2, Options{}); rep.Valid != Valid {
		t.Errorf("info commit: %s", rep.Summary())
	}
}

// A rebalance while a poll waits: the poll's records come from the new
// assignment, resuming at the committed offset. Not an anomaly.
func TestAssignDuringPollResets(t *testing.T) {
	poll := func(typ history.Type, recs ...history.Record) history.Op {
		return history.Op{Process: 5, Type: typ, F: history.Poll, Group: "g", Records: recs}
	}
	h := hist(
		produce(1, history.Invoke, rec(-1, "a")), produce(1, history.OK, rec(0, "a")),
		produce(1, history.Invoke, rec(-1, "b")), produce(1, history.OK, rec(1, "b")),
		poll(history.Invoke), poll(history.OK, rec(0, "a"), rec(1, "b")),
		poll(history.Invoke),
		history.Op{Process: 5, Type: history.OK, F: history.Assign, Group: "g"},
		poll(history.OK, rec(1, "b")),
		final(3, history.Invoke, 0), final(3, history.OK, 2, rec(0, "a"), rec(1, "b")),
	)
	if rep := Check(h, Options{Checkers: []string{PollOrder}}); rep.Valid != Valid {
		t.Fatalf("poll after a rebalance during it: %s", rep.Summary())
	}
	// Without the rebalance it is a nonmonotonic poll.
	h = append(h[:7:7], h[8:]...)
	for i := range h {
		h[i].Index = int64(i)
	}
	wantAnomaly(t, h, PollOrder, anomalyNonmonotonic, "b")
}
