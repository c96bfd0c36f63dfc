package check

import (
	"fmt"
	"sort"

	"github.com/floe-broker/floe/jepsen/history"
)

// Checker names.
const (
	LostWrite            = "lost-write"
	Duplicate            = "duplicate"
	InconsistentOffsets  = "inconsistent-offsets"
	UnexpectedValue      = "unexpected-value"
	PollOrder            = "poll"
	Unseen               = "unseen"
	HWMRegression        = "hwm-regression"
	CommittedRegression  = "committed-offset-regression"
	LinearizableLog      = "linearizable-log"
	LinearizableOffsets  = "linearizable-offsets"
	TxnOutcomes          = "txn"
	LSORegression        = "lso-regression"
	TxnReads             = "txn-reads"
	anomalyNonmonotonic  = "nonmonotonic-poll"
	anomalyPollSkip      = "poll-skip"
	anomalyNonlinearLog  = "nonlinearizable-log"
	anomalyNonlinearOffs = "nonlinearizable-offsets"
)

// ackedValues returns the acknowledged values, grouped by partition, each
// group in a fixed order.
func (a *analysis) ackedValues() map[history.TP][]string {
	out := map[history.TP][]string{}
	for _, v := range sortedValues(a.produces) {
		if pr := a.produces[v]; pr.acked {
			out[pr.tp] = append(out[pr.tp], v)
		}
	}
	return out
}

func (a *analysis) events(pr *produced) []int64 {
	op := a.ops[pr.op]
	if op.Done.Index < 0 {
		return []int64{op.Invoke.Index}
	}
	return []int64{op.Invoke.Index, op.Done.Index}
}

// checkLostWrite: every acknowledged value must be in its partition's final
// read. A partition with acknowledged values and no ok final read makes the
// verdict unknown.
func checkLostWrite(a *analysis, opts Options) Result {
	r := newResult(LostWrite, opts)
	acked := a.ackedValues()
	for _, tp := range a.sortedTPs() {
		p := a.parts[tp]
		if len(acked[tp]) == 0 {
			continue
		}
		if !p.hasFinal {
			r.unknown("%s: %d acknowledged values but no final read", tp, len(acked[tp]))
			continue
		}
		r.stat("acknowledged", int64(len(acked[tp])))
		for _, v := range acked[tp] {
			if p.finalVals[v] {
				continue
			}
			pr := a.produces[v]
			d := tpDetail(tp, fmt.Sprintf("acknowledged at offset %d, missing from the final read (high watermark %d)", pr.ackOffset, p.finalHWM))
			d.Value, d.Offsets, d.Events = v, []int64{pr.ackOffset}, a.events(pr)
			r.add(LostWrite, d)
		}
	}
	return *r
}

// checkDuplicate: a value read at two offsets. Values of non-idempotent
// producers may legitimately be written twice by a retry.
func checkDuplicate(a *analysis, opts Options) Result {
	r := newResult(Duplicate, opts)
	for _, tp := range a.sortedTPs() {
		p := a.parts[tp]
		for _, v := range sortedValues(p.readOffs) {
			offs := sortedOffsets(p.readOffs[v])
			if len(offs) < 2 {
				continue
			}
			if pr := a.produces[v]; pr != nil && !pr.idempotent {
				r.stat("allowed-non-idempotent", 1)
				continue
			}
			d := tpDetail(tp, fmt.Sprintf("value at %d offsets", len(offs)))
			d.Value, d.Offsets = v, offs
			r.add(Duplicate, d)
		}
	}
	return *r
}

// checkInconsistentOffsets: two different values at one offset, over all
// reads and the offsets acknowledged produces were given.
func checkInconsistentOffsets(a *analysis, opts Options) Result {
	r := newResult(InconsistentOffsets, opts)
	for _, tp := range a.sortedTPs() {
		p := a.parts[tp]
		for _, off := range sortedOffsets(p.seen) {
			vals := p.seen[off]
			if len(vals) < 2 {
				continue
			}
			d := tpDetail(tp, fmt.Sprintf("%d values at one offset: %v", len(vals), sortedValues(vals)))
			d.Offsets = []int64{off}
			for _, v := range sortedValues(vals) {
				d.Events = append(d.Events, vals[v]...)
			}
			sort.Slice(d.Events, func(i, j int) bool { return d.Events[i] < d.Events[j] })
			r.add(InconsistentOffsets, d)
		}
	}
	return *r
}

// checkUnexpected: a value read that no produce wrote (corruption, a bad
// offset-to-record mapping), or read from another partition.
func checkUnexpected(a *analysis, opts Options) Result {
	r := newResult(UnexpectedValue, opts)
	for _, tp := range a.sortedTPs() {
		p := a.parts[tp]
		for _, v := range sortedValues(p.readOffs) {
			pr := a.produces[v]
			switch {
			case pr == nil:
				d := tpDetail(tp, "read a value no produce wrote")
				d.Value, d.Offsets = v, sortedOffsets(p.readOffs[v])
				r.add(UnexpectedValue, d)
			case pr.tp != tp:
				d := tpDetail(tp, fmt.Sprintf("value produced to %s", pr.tp))
				d.Value, d.Offsets, d.Events = v, sortedOffsets(p.readOffs[v]), a.events(pr)
				r.add(UnexpectedValue, d)
			}
		}
	}
	return *r
}

// checkUnseen: acknowledged values that no consumer poll ever returned:
// consumers never got them, though the run drained after healing. Without
// any poll there is nothing to judge: valid, with a note.
func checkUnseen(a *analysis, opts Options) Result {
	r := newResult(Unseen, opts)
	polled := 0
	for _, p := range a.parts {
		polled += len(p.polledVals)
	}
	if polled == 0 {
		r.note("no poll returned any record: nothing to judge")
		return *r
	}
	acked := a.ackedValues()
	for _, tp := range a.sortedTPs() {
		p := a.parts[tp]
		for _, v := range acked[tp] {
			r.stat("acknowledged", 1)
			if p.polledVals[v] {
				continue
			}
			pr := a.produces[v]
			d := tpDetail(tp, "acknowledged, never returned by a consumer poll")
			d.Value, d.Offsets, d.Events = v, []int64{pr.ackOffset}, a.events(pr)
			r.add(Unseen, d)
		}
	}
	return *r
}
