package check

import (
	"fmt"
	"sort"

	"github.com/floe-broker/floe/jepsen/history"
)

// checkPoll also holds fetches and final reads to the same rule: their
// records run up from the start offset without going back or skipping an
// offset that exists.
//
// checkPoll: within one consumer's assignment, the offsets a process polls
// from a partition must go up by exactly one known offset at a time. The
// offsets that exist are those any read saw (offsets may have gaps: control
// records, compaction). An assign event, or a poll that did not complete ok,
// starts the process afresh: after a rebalance a consumer legitimately
// resumes from the committed offset. Operations are taken in the order they
// completed: a rebalance during a poll (assign events come from the
// client's group goroutine) applies to the records that poll returns.
func checkPoll(a *analysis, opts Options) Result {
	r := newResult(PollOrder, opts)
	last := map[int64]map[history.TP]int64{} // process -> partition -> last offset polled
	for _, op := range byCompletion(a.ops) {
		proc := op.Invoke.Process
		switch {
		case (op.Invoke.F == history.Fetch || op.Invoke.F == history.Read) && op.Done.Type == history.OK:
			checkFetchRecords(a, r, op)
		case op.Invoke.F == history.Assign:
			delete(last, proc)
		case op.Invoke.F != history.Poll:
		case op.Done.Type != history.OK:
			delete(last, proc)
		default:
			if last[proc] == nil {
				last[proc] = map[history.TP]int64{}
			}
			r.stat("polls", 1)
			checkPollRecords(a, r, op.Done, last[proc])
		}
	}
	return *r
}

func checkPollRecords(a *analysis, r *Result, done history.Op, last map[history.TP]int64) {
	for _, rec := range done.Records {
		tp := rec.TP()
		prev, ok := last[tp]
		last[tp] = rec.Offset
		if !ok {
			continue
		}
		d := tpDetail(tp, "")
		d.Offsets, d.Events, d.Value = []int64{prev, rec.Offset}, []int64{done.Index}, rec.Value
		if rec.Offset <= prev {
			d.Msg = fmt.Sprintf("process %d polled offset %d after %d", done.Process, rec.Offset, prev)
			r.add(anomalyNonmonotonic, d)
			continue
		}
		if next := a.parts[tp].nextKnown(prev); next >= 0 && rec.Offset > next {
			d.Msg = fmt.Sprintf("process %d polled offset %d after %d, skipping %d", done.Process, rec.Offset, prev, next)
			r.add(anomalyPollSkip, d)
		}
	}
}

func checkFetchRecords(a *analysis, r *Result, op history.Operation) {
	prev := op.Invoke.Offsets[0].Offset - 1
	for _, rec := range op.Done.Records {
		d := tpDetail(rec.TP(), "")
		d.Offsets, d.Events, d.Value = []int64{prev, rec.Offset}, []int64{op.Done.Index}, rec.Value
		if skip := fetchStep(a.parts[rec.TP()], prev, rec.Offset); skip != "" {
			d.Msg = fmt.Sprintf("%s from %d: %s", op.Invoke.F, op.Invoke.Offsets[0].Offset, skip)
			if rec.Offset <= prev {
				r.add(anomalyNonmonotonic, d)
			} else {
				r.add(anomalyPollSkip, d)
			}
		}
		prev = rec.Offset
	}
}

// fetchStep says what is wrong with reading offset next right after prev:
// going back, or skipping an offset some read saw ("" if nothing).
func fetchStep(p *partLog, prev, next int64) string {
	if next <= prev {
		return fmt.Sprintf("offset %d after %d", next, prev)
	}
	if p.knownIn(prev+1, next) {
		return fmt.Sprintf("offset %d after %d, skipping %d", next, prev, p.nextKnown(prev))
	}
	return ""
}

// byCompletion orders operations by their completion event (an operation
// that never completed, by its invoke).
func byCompletion(ops []history.Operation) []history.Operation {
	out := append([]history.Operation(nil), ops...)
	at := func(op history.Operation) int64 {
		if op.Done.Index >= 0 {
			return op.Done.Index
		}
		return op.Invoke.Index
	}
	sort.SliceStable(out, func(i, j int) bool { return at(out[i]) < at(out[j]) })
	return out
}
