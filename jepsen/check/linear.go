package check

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/floe-broker/floe/jepsen/history"
)

// The log model. The state is L, the length of the partition's committed
// log (the high watermark). Every value observed at an offset o, and every
// acknowledged value at the offset it was given, is an append at o: it
// takes effect when L == o, and makes L = o+1. A fetch that reports high
// watermark h takes effect when L == h; one without a high watermark needs
// L past its last record. Records must match the value believed to be at
// their offset.
//
// Offsets nobody observed may have been filled by produces whose outcome
// is unknown and whose values nobody read: L may jump over a run of
// unobserved offsets ("gap fill"). Produces that did not complete ok and
// whose values nobody read are left out: "never happened" is always a
// possible outcome for them, and leaving them out is exactly that choice.
//
// A produce retried by an idempotent client may in truth land twice (the
// duplicate checker reports it); each copy is an append of its own within
// the produce's window, so this model judges the ordering, not the count.

// logInput is one operation of the log model.
type logInput struct {
	write  bool
	offset int64 // write: the offset appended at
	// read: the records (offset, value) and the high watermark (-1: none).
	records []history.Record
	hwm     int64
	event   int64
	// skips: the records go back or skip an offset that exists: no state
	// of the log explains them.
	skips bool
}

// budget bounds a Porcupine search by model steps, so its outcome does not
// depend on machine speed.
type budget struct {
	left      int64
	exhausted bool
}

func (b *budget) spend() bool {
	if b.left <= 0 {
		b.exhausted = true
		return false
	}
	b.left--
	return true
}

// logModel is the log model starting from L = from (0 for a whole history;
// a later piece's start, logPieces).
func logModel(p *partLog, b *budget, staleFetches bool, from int64) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return from },
		Step: func(state, input, _ any) (bool, any) {
			if !b.spend() {
				return false, state
			}
			return logStep(p, state.(int64), input.(*logInput), staleFetches)
		},
		Hash: func(state any) uint64 { return uint64(state.(int64)) },
		DescribeOperation: func(input, _ any) string {
			in := input.(*logInput)
			if in.write {
				return fmt.Sprintf("append@%d (event %d)", in.offset, in.event)
			}
			return fmt.Sprintf("fetch %d records hwm %d (event %d)", len(in.records), in.hwm, in.event)
		},
	}
}

// advance moves L to target if target == L, or if every offset in between
// is unobserved (gap fill).
func advance(p *partLog, l, target int64) (bool, int64) {
	if l == target {
		return true, l
	}
	if l < target && !p.knownIn(l, target) {
		return true, target
	}
	return false, l
}

func logStep(p *partLog, l int64, in *logInput, staleFetches bool) (bool, any) {
	if in.write {
		ok, l2 := advance(p, l, in.offset)
		if !ok {
			return false, l
		}
		return true, l2 + 1
	}
	if in.skips {
		return false, l
	}
	top := int64(0)
	for _, rec := range in.records {
		if v, known := p.truth[rec.Offset]; known && v != rec.Value {
			return false, l
		}
		top = max(top, rec.Offset+1)
	}
	if in.hwm < 0 {
		if l >= top {
			return true, l
		}
		ok, l2 := advance(p, l, top)
		return ok, l2
	}
	if top > in.hwm {
		return false, l // a record at or past the high watermark: uncommitted
	}
	if staleFetches && in.hwm <= l {
		return true, l
	}
	ok, l2 := advance(p, l, in.hwm)
	return ok, l2
}

// logOperations builds the Porcupine history of one partition.
func logOperations(a *analysis, p *partLog) []porcupine.Operation {
	var out []porcupine.Operation
	add := func(op history.Operation, end int64, in *logInput) {
		out = append(out, porcupine.Operation{ClientId: int(op.Invoke.Process), Input: in,
			Call: op.Invoke.Time, Return: end, Output: nil})
	}
	for _, v := range sortedValues(a.produces) {
		pr := a.produces[v]
		if pr.tp != p.tp {
			continue
		}
		op := a.ops[pr.op]
		end := op.Done.Time
		if !pr.acked {
			end = history.Never
		}
		at := map[int64]bool{}
		for off := range p.readOffs[v] {
			if p.truth[off] == v {
				at[off] = true
			}
		}
		if pr.acked && pr.ackOffset >= 0 {
			at[pr.ackOffset] = true
		}
		for _, off := range sortedOffsets(at) {
			add(op, end, &logInput{write: true, offset: off, event: op.Invoke.Index})
		}
	}
	for _, off := range p.known {
		if a.produces[p.truth[off]] == nil { // unexpected value: placed anywhere
			out = append(out, porcupine.Operation{Input: &logInput{write: true, offset: off, event: -1},
				Call: 0, Return: history.Never})
		}
	}
	for _, op := range a.ops {
		f := op.Invoke.F
		if (f != history.Fetch && f != history.Read) || op.Done.Type != history.OK || op.TP() != p.tp {
			continue
		}
		in := &logInput{records: op.Done.Records, hwm: -1, event: op.Done.Index}
		prev := op.Invoke.Offsets[0].Offset - 1
		for _, rec := range in.records {
			in.skips = in.skips || fetchStep(p, prev, rec.Offset) != ""
			prev = rec.Offset
		}
		for _, hw := range op.Done.HWMs {
			in.hwm = hw.Offset
		}
		add(op, op.Done.Time, in)
	}
	return out
}

// porcupineVerdict runs one Porcupine search and turns its answer into a
// verdict: a search that ran out of budget or time is unknown.
func porcupineVerdict(model porcupine.Model, ops []porcupine.Operation, b *budget, timeout time.Duration) Validity {
	res := porcupine.CheckOperationsTimeout(model, ops, timeout)
	switch {
	case b.exhausted || res == porcupine.Unknown:
		return Unknown
	case res == porcupine.Ok:
		return Valid
	default:
		return Invalid
	}
}

// checkLinearizableLog runs the log model on each partition, one piece
// at a time (logPieces), each piece's search with its own step budget.
func checkLinearizableLog(a *analysis, opts Options) Result {
	r := newResult(LinearizableLog, opts)
	for _, tp := range a.sortedTPs() {
		p := a.parts[tp]
		ops := logOperations(a, p)
		if len(ops) == 0 {
			continue
		}
		r.stat("operations", int64(len(ops)))
		v, piece := logVerdict(p, ops, opts)
		switch v {
		case Invalid:
			r.add(anomalyNonlinearLog, tpDetail(tp, fmt.Sprintf("no linearization of %d operations (none of the %d operations called from time %d on)",
				len(ops), len(piece), piece[0].Call)))
		case Unknown:
			r.unknown("%s: search inconclusive (step budget %d, timeout %v, in the %d operations called from time %d on)",
				tp, opts.stepBudget(), opts.Timeout, len(piece), piece[0].Call)
		}
	}
	return *r
}

// logVerdict checks one partition's operations piece by piece: the first
// piece that is not Valid decides (and is returned), else Valid. The pieces
// are separate searches, so each has the step budget a whole history had
// before: a long history is many short searches, not one long one.
func logVerdict(p *partLog, ops []porcupine.Operation, opts Options) (Validity, []porcupine.Operation) {
	from := int64(0)
	for _, piece := range logPieces(ops) {
		b := &budget{left: opts.stepBudget()}
		if v := porcupineVerdict(logModel(p, b, opts.StaleFetches, from), piece, b, opts.Timeout); v != Valid {
			return v, piece
		}
		for _, op := range piece {
			from = max(from, logTarget(op.Input.(*logInput)))
		}
	}
	return Valid, nil
}

// Splitting a partition's history. Porcupine's cache keeps a copy of the
// set of linearized operations for every state it reaches, so one search
// over n operations holds about n*n/8 bytes: a long simulator seed's
// 200,000 operations took more than 10 GB. The log model lets a history be
// checked in pieces with the same verdict:
//
//   - Every step moves L to max(L, target) or fails (logStep): a write at o
//     to o+1, a fetch to its high watermark, or past its last record when
//     it reports none. So whatever order linearizes a set of operations, L
//     ends at the largest of their targets: the state after a piece is one
//     number, known without searching.
//   - Where no operation is in flight (every earlier one returned before
//     every later one is called), real time puts the earlier ones first in
//     any linearization. The whole history is linearizable exactly when the
//     part before is (from L = 0) and the part after is, from the first
//     part's final L.
//   - A write that never completed runs until Never and would leave no such
//     point after its call. But a write at o must take effect while L <= o,
//     so before every operation whose target is past o: ending it at the
//     first return of such an operation adds no constraint the model does
//     not already impose (anything called after that return follows that
//     operation, which follows the write). tightenWrites does so.

// logTarget is where op leaves L at the least: L' = max(L, target).
func logTarget(in *logInput) int64 {
	if in.write {
		return in.offset + 1
	}
	if in.hwm >= 0 {
		return in.hwm
	}
	top := int64(0)
	for _, rec := range in.records {
		top = max(top, rec.Offset+1)
	}
	return top
}

// tightenWrites ends every write no later than the first return of an
// operation whose target is past its offset (never before its call).
func tightenWrites(ops []porcupine.Operation) {
	type bound struct{ target, ret int64 }
	var bs []bound
	for _, op := range ops {
		if op.Return != history.Never {
			bs = append(bs, bound{logTarget(op.Input.(*logInput)), op.Return})
		}
	}
	slices.SortFunc(bs, func(x, y bound) int { return cmp.Compare(x.target, y.target) })
	// firstRet[i]: the earliest return among bs[i:].
	firstRet := make([]int64, len(bs)+1)
	firstRet[len(bs)] = history.Never
	for i := len(bs) - 1; i >= 0; i-- {
		firstRet[i] = min(firstRet[i+1], bs[i].ret)
	}
	for i := range ops {
		in := ops[i].Input.(*logInput)
		if !in.write {
			continue
		}
		j := sort.Search(len(bs), func(j int) bool { return bs[j].target > in.offset })
		if end := max(ops[i].Call, firstRet[j]); end < ops[i].Return {
			ops[i].Return = end
		}
	}
}

// logPieces tightens the writes of ops and splits ops, in call order, at
// every point where no operation is in flight.
func logPieces(ops []porcupine.Operation) [][]porcupine.Operation {
	ops = slices.Clone(ops)
	tightenWrites(ops)
	slices.SortStableFunc(ops, func(x, y porcupine.Operation) int { return cmp.Compare(x.Call, y.Call) })
	var pieces [][]porcupine.Operation
	start, lastReturn := 0, int64(math.MinInt64)
	for i, op := range ops {
		// Porcupine orders a call before a return at the same time:
		// only a return strictly before the call separates them.
		if i > start && lastReturn < op.Call {
			pieces = append(pieces, ops[start:i])
			start = i
		}
		lastReturn = max(lastReturn, op.Return)
	}
	return append(pieces, ops[start:])
}

// The committed-offset model: a register per (group, partition). A commit
// sets it; an offset fetch must return it (-1: nothing committed). A commit
// that did not complete ok runs until Never, so Porcupine may place it last,
// where it has no effect: "may have happened". Such commits whose value no
// read returned are left out (that same choice, made up front), which keeps
// searches small.

type offsetInput struct {
	write bool
	v     int64
}

func offsetModel(b *budget) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return history.NoOffset },
		Step: func(state, input, _ any) (bool, any) {
			if !b.spend() {
				return false, state
			}
			in := input.(*offsetInput)
			if in.write {
				return true, in.v
			}
			return state.(int64) == in.v, state
		},
		Hash: func(state any) uint64 { return uint64(state.(int64)) },
	}
}

func checkLinearizableOffsets(a *analysis, opts Options) Result {
	r := newResult(LinearizableOffsets, opts)
	keys, writes, reads := commitOps(a)
	for _, k := range keys {
		if len(reads[k]) == 0 {
			continue
		}
		readVals := map[int64]bool{}
		var ops []porcupine.Operation
		for _, o := range reads[k] {
			readVals[o.v] = true
			ops = append(ops, porcupine.Operation{Input: &offsetInput{v: o.v}, Call: o.start, Return: o.end})
		}
		for _, w := range writes[k] {
			if w.end == history.Never && !readVals[w.v] {
				continue
			}
			ops = append(ops, porcupine.Operation{Input: &offsetInput{write: true, v: w.v}, Call: w.start, Return: w.end})
		}
		r.stat("operations", int64(len(ops)))
		b := &budget{left: opts.stepBudget()}
		switch porcupineVerdict(offsetModel(b), ops, b, opts.Timeout) {
		case Invalid:
			r.add(anomalyNonlinearOffs, Detail{Topic: k.tp.Topic, Partition: k.tp.Partition, Group: k.group,
				Msg: fmt.Sprintf("no linearization of %d commits and offset fetches", len(ops))})
		case Unknown:
			r.unknown("%s %s: search inconclusive (step budget %d, timeout %v)", k.group, k.tp, opts.stepBudget(), opts.Timeout)
		}
	}
	return *r
}
