package check

import (
	"testing"

	"github.com/floe-broker/floe/jepsen/history"
	"pgregory.net/rapid"
)

func mustValid(t testing.TB, h history.History, opts Options) Report {
	t.Helper()
	rep := Check(h, opts)
	if rep.Valid != Valid {
		t.Fatalf("clean history judged %s:\n%s", rep.Valid, rep.Summary())
	}
	return rep
}

func TestCleanGeneratedHistoriesAreValid(t *testing.T) {
	for seed := int64(1); seed <= 30; seed++ {
		h := newGen(defaultGen(seed)).run()
		if err := history.Validate(h); err != nil {
			t.Fatalf("seed %d: generator wrote a malformed history: %v", seed, err)
		}
		rep := mustValid(t, h, Options{})
		if len(rep.Results) != len(Names()) {
			t.Fatalf("%d results, want %d", len(rep.Results), len(Names()))
		}
	}
}

// Property: whatever the shape of the workload, a history from the correct
// reference broker is valid under every checker.
func TestCleanHistoriesProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := genConfig{
			seed:       rapid.Int64().Draw(rt, "seed"),
			partitions: rapid.IntRange(1, 4).Draw(rt, "partitions"),
			producers:  rapid.IntRange(1, 6).Draw(rt, "producers"),
			fetchers:   rapid.IntRange(0, 3).Draw(rt, "fetchers"),
			groups:     rapid.IntRange(0, 2).Draw(rt, "groups"),
			steps:      rapid.IntRange(0, 400).Draw(rt, "steps"),
			infoPct:    rapid.IntRange(0, 30).Draw(rt, "infoPct"),
		}
		h := newGen(cfg).run()
		if rep := Check(h, Options{}); rep.Valid != Valid {
			rt.Fatalf("clean history judged %s:\n%s", rep.Valid, rep.Summary())
		}
	})
}

func TestCheckIsDeterministic(t *testing.T) {
	h := newGen(defaultGen(7)).run()
	h = plantLostWrite(t, h)
	a, b := Check(h, Options{}).Summary(), Check(h, Options{}).Summary()
	if a != b {
		t.Fatalf("two checks of one history differ:\n%s\n---\n%s", a, b)
	}
}

func TestMalformedHistoryIsUnknown(t *testing.T) {
	h := history.History{{Index: 0, Process: 1, Type: history.OK, F: history.Produce}}
	rep := Check(h, Options{})
	if rep.Valid != Unknown || len(rep.Results) != 1 || rep.Results[0].Checker != "history" {
		t.Fatalf("malformed history: %s", rep.Summary())
	}
}

func TestUnknownCheckerName(t *testing.T) {
	rep := Check(newGen(defaultGen(1)).run(), Options{Checkers: []string{LostWrite, "no-such"}})
	if rep.Valid != Unknown || len(rep.Results) != 2 {
		t.Fatalf("unknown checker name: %s", rep.Summary())
	}
}

func TestMissingFinalReadIsUnknown(t *testing.T) {
	var h history.History
	for _, op := range newGen(defaultGen(3)).run() {
		if op.F != history.Read {
			op.Index = int64(len(h))
			h = append(h, op)
		}
	}
	rep := Check(h, Options{Checkers: []string{LostWrite}})
	if rep.Valid != Unknown {
		t.Fatalf("no final read judged %s", rep.Valid)
	}
}

func TestTinyStepBudgetIsUnknownNeverValid(t *testing.T) {
	h := newGen(defaultGen(5)).run()
	rep := Check(h, Options{StepBudget: 10, Checkers: []string{LinearizableLog, LinearizableOffsets}})
	for _, r := range rep.Results {
		if r.Valid != Unknown {
			t.Errorf("%s with a 10-step budget judged %s", r.Checker, r.Valid)
		}
	}
}
