package check

import (
	"math/rand"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/floe-broker/floe/jepsen/history"
)

// wholeLogVerdict is the log model's verdict on one partition's history
// searched whole, as before logPieces: the reference the split must match.
func wholeLogVerdict(p *partLog, ops []porcupine.Operation, staleFetches bool) Validity {
	b := &budget{left: Options{}.stepBudget()}
	return porcupineVerdict(logModel(p, b, staleFetches, 0), ops, b, 0)
}

// perturb breaks a clean history in one of a few ways a faulty broker
// would (a stale high watermark, a wrong value, a lost record, a record
// served early), or leaves it clean; it says which.
func perturb(rng *rand.Rand, h history.History) (history.History, string) {
	h = clone(h)
	var reads []int
	var values []string
	for i, op := range h {
		if (op.F == history.Fetch || op.F == history.Read) && op.Type == history.OK {
			reads = append(reads, i)
		}
		if op.F == history.Produce && op.Type == history.OK {
			values = append(values, op.Records[0].Value)
		}
	}
	if len(reads) == 0 || len(values) == 0 {
		return h, "clean"
	}
	i := reads[rng.Intn(len(reads))]
	op := &h[i]
	switch k := rng.Intn(5); {
	case k == 0 && len(op.HWMs) > 0 && op.HWMs[0].Offset > 0:
		op.HWMs[0].Offset -= 1 + rng.Int63n(op.HWMs[0].Offset)
		var kept []history.Record
		for _, r := range op.Records {
			if r.Offset < op.HWMs[0].Offset {
				kept = append(kept, r)
			}
		}
		op.Records = kept
		return h, "stale-hwm"
	case k == 1 && len(op.Records) > 0:
		op.Records[rng.Intn(len(op.Records))].Value = values[rng.Intn(len(values))]
		return h, "wrong-value"
	case k == 2 && len(op.Records) > 1:
		j := rng.Intn(len(op.Records))
		op.Records = append(op.Records[:j:j], op.Records[j+1:]...)
		return h, "lost-record"
	case k == 3 && len(op.HWMs) > 0:
		// The high watermark and the records of a later read of the same
		// partition: served before it was written, if it grew since.
		for _, j := range reads[rng.Intn(len(reads)):] {
			later := h[j]
			if j > i && len(later.HWMs) > 0 && later.HWMs[0].TP() == op.HWMs[0].TP() && later.HWMs[0].Offset > op.HWMs[0].Offset {
				op.HWMs[0].Offset = later.HWMs[0].Offset
				return h, "future-hwm"
			}
		}
	}
	return h, "clean"
}

// Splitting a partition's history where nothing is in flight, after ending
// never-completed writes at the first return that needs them, gives the
// verdict of the whole-history search: on clean generated histories and on
// ones broken at random, with and without stale fetches allowed.
func TestLogPiecesVerdictMatchesWholeSearch(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	verdicts := map[Validity]int{}
	split := 0
	for seed := int64(1); seed <= 60; seed++ {
		cfg := defaultGen(seed)
		cfg.steps = 300
		clean := clone(newGen(cfg).run())
		for try := 0; try < 4; try++ {
			h, how := perturb(rng, clean)
			a, err := analyze(h)
			if err != nil {
				t.Fatalf("seed %d %s: %v", seed, how, err)
			}
			for _, tp := range a.sortedTPs() {
				p := a.parts[tp]
				ops := logOperations(a, p)
				if len(ops) == 0 {
					continue
				}
				if len(logPieces(ops)) > 1 {
					split++
				}
				for _, stale := range []bool{false, true} {
					want := wholeLogVerdict(p, ops, stale)
					got, _ := logVerdict(p, ops, Options{StaleFetches: stale})
					if got != want {
						t.Fatalf("seed %d try %d (%s) %v stale=%v: split %s, whole %s", seed, try, how, tp, stale, got, want)
					}
					verdicts[got]++
				}
			}
		}
	}
	t.Logf("verdicts %v; %d partition histories split", verdicts, split)
	if verdicts[Valid] < 100 || verdicts[Invalid] < 50 || split < 100 {
		t.Fatalf("the comparison exercised too little: verdicts %v, %d split", verdicts, split)
	}
}

// A write that never completed but was read ends at the read's return, so
// the history splits after it; one whose offset nothing passed keeps
// running until Never.
func TestTightenWritesEndsAtFirstReadPastIt(t *testing.T) {
	ops := []porcupine.Operation{
		{Input: &logInput{write: true, offset: 0}, Call: 10, Return: history.Never},
		{Input: &logInput{hwm: 1, records: []history.Record{{Offset: 0, Value: "a"}}}, Call: 20, Return: 30},
		{Input: &logInput{hwm: 1}, Call: 40, Return: 50},
		{Input: &logInput{write: true, offset: 5}, Call: 60, Return: history.Never},
	}
	pieces := logPieces(ops)
	if len(pieces) != 3 || len(pieces[0]) != 2 {
		t.Fatalf("pieces %v, want [write read] [read] [write]", pieces)
	}
	if pieces[0][0].Return != 30 {
		t.Fatalf("write at 0 ends at %d, want 30 (the read past it)", pieces[0][0].Return)
	}
	if pieces[2][0].Return != history.Never {
		t.Fatalf("write at 5 ends at %d, want Never", pieces[2][0].Return)
	}
	if ops[0].Return != history.Never {
		t.Fatal("logPieces changed its argument")
	}
}

// Porcupine takes a call and a return at the same time as concurrent, so
// no cut falls between them.
func TestLogPiecesNoCutAtATie(t *testing.T) {
	ops := []porcupine.Operation{
		{Input: &logInput{write: true, offset: 0}, Call: 10, Return: 50},
		{Input: &logInput{write: true, offset: 1}, Call: 50, Return: 60},
	}
	if pieces := logPieces(ops); len(pieces) != 1 {
		t.Fatalf("%d pieces, want 1: a return and a call at time 50 overlap", len(pieces))
	}
}
