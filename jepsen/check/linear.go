package check

import (
	"fmt"
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

func logModel(p *partLog, b *budget, staleFetches bool) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return int64(0) },
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

// checkLinearizableLog runs the log model on each partition.
func checkLinearizableLog(a *analysis, opts Options) Result {
	r := newResult(LinearizableLog, opts)
	for _, tp := range a.sortedTPs() {
		p := a.parts[tp]
		ops := logOperations(a, p)
		if len(ops) == 0 {
			continue
		}
		r.stat("operations", int64(len(ops)))
		b := &budget{left: opts.stepBudget()}
		switch porcupineVerdict(logModel(p, b, opts.StaleFetches), ops, b, opts.Timeout) {
		case Invalid:
			r.add(anomalyNonlinearLog, tpDetail(tp, fmt.Sprintf("no linearization of %d operations", len(ops))))
		case Unknown:
			r.unknown("%s: search inconclusive (step budget %d, timeout %v)", tp, opts.stepBudget(), opts.Timeout)
		}
	}
	return *r
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
