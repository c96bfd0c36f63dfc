package check

import (
	"time"

	"github.com/floe-broker/floe/jepsen/history"
)

// Options tune a check. The zero value is the strict default.
type Options struct {
	// Checkers names the checkers to run (the constants above); empty runs
	// all of them.
	Checkers []string
	// StepBudget bounds each Porcupine search, in model steps (0: 5,000,000).
	// Running out makes that search unknown. Deterministic, unlike Timeout.
	StepBudget int64
	// Timeout bounds each Porcupine search in wall-clock time (0: none).
	// Leave it zero where verdicts must replay (the simulator).
	Timeout time.Duration
	// DetailsMax caps the details kept per anomaly (0: 20).
	DetailsMax int
	// StaleFetches lets a fetch report a high watermark older than the
	// latest commit (reads that are not linearizable, only never ahead of
	// the log). Off by default: Floe's fetches are meant to be linearizable.
	StaleFetches bool
}

func (o Options) stepBudget() int64 {
	if o.StepBudget > 0 {
		return o.StepBudget
	}
	return 5_000_000
}

func (o Options) detailsMax() int {
	if o.DetailsMax > 0 {
		return o.DetailsMax
	}
	return 20
}

// checkers lists every checker in the order reports show them.
var checkers = []struct {
	name string
	run  func(*analysis, Options) Result
}{
	{LostWrite, checkLostWrite},
	{Duplicate, checkDuplicate},
	{InconsistentOffsets, checkInconsistentOffsets},
	{UnexpectedValue, checkUnexpected},
	{PollOrder, checkPoll},
	{Unseen, checkUnseen},
	{HWMRegression, checkHWMRegression},
	{CommittedRegression, checkCommittedRegression},
	{LinearizableLog, checkLinearizableLog},
	{LinearizableOffsets, checkLinearizableOffsets},
	{TxnOutcomes, checkTxnOutcomes},
	{LSORegression, checkLSORegression},
	{TxnReads, checkTxnReads},
}

// Names returns the names of every checker, in report order.
func Names() []string {
	out := make([]string, len(checkers))
	for i, c := range checkers {
		out[i] = c.name
	}
	return out
}

// Check runs the chosen checkers on h. A malformed history (see
// history.Validate) gives one unknown result, "history", saying why.
func Check(h history.History, opts Options) Report {
	a, err := analyze(h)
	if err != nil {
		r := newResult("history", opts)
		r.unknown("malformed history: %v", err)
		return Report{Valid: Unknown, Results: []Result{*r}}
	}
	want := map[string]bool{}
	for _, n := range opts.Checkers {
		want[n] = true
	}
	rep := Report{Valid: Valid}
	for _, c := range checkers {
		if len(want) > 0 && !want[c.name] {
			continue
		}
		res := c.run(a, opts)
		rep.Valid = worse(rep.Valid, res.Valid)
		rep.Results = append(rep.Results, res)
	}
	for _, n := range sortedKeys(want) {
		if !known(n) {
			r := newResult(n, opts)
			r.unknown("no such checker")
			rep.Valid = worse(rep.Valid, Unknown)
			rep.Results = append(rep.Results, *r)
		}
	}
	return rep
}

func known(name string) bool {
	for _, c := range checkers {
		if c.name == name {
			return true
		}
	}
	return false
}
