package check

import (
	"sort"

	"github.com/floe-broker/floe/jepsen/history"
)

// analysis is what every checker needs from a history, computed once.
//
// Invariant: every value in produces was produced by exactly one operation
// (history.Pairs rejects reused values).
type analysis struct {
	ops      []history.Operation
	produces map[string]*produced // by value
	parts    map[history.TP]*partLog
}

// produced is one value a produce wrote.
type produced struct {
	op         int // index into analysis.ops
	tp         history.TP
	acked      bool  // completed ok with the acks=all promise
	ackOffset  int64 // offset the broker returned, -1 if none
	idempotent bool
}

// source ranks how much an observation of a value at an offset is trusted
// when choosing the partition's "truth": the final read, then other reads,
// then acknowledgements.
type source int

const (
	fromAck source = iota
	fromRead
	fromFinal
)

// partLog is everything observed about one partition's log.
type partLog struct {
	tp history.TP
	// seen: offset -> value -> events that saw that value there (reads and
	// durable acks).
	seen map[int64]map[string][]int64
	// truth: offset -> the value believed to be there, from the most
	// trusted source that saw the offset.
	truth      map[int64]string
	truthFrom  map[int64]source
	known      []int64                   // sorted offsets of truth
	readOffs   map[string]map[int64]bool // value -> offsets where a read saw it
	finalVals  map[string]bool           // values in an ok final read
	finalHWM   int64                     // -1 without an ok final read
	hasFinal   bool
	polledVals map[string]bool // values returned by a consumer poll
}

func newPartLog(tp history.TP) *partLog {
	return &partLog{
		tp: tp, seen: map[int64]map[string][]int64{}, truth: map[int64]string{},
		truthFrom: map[int64]source{}, readOffs: map[string]map[int64]bool{},
		finalVals: map[string]bool{}, finalHWM: -1, polledVals: map[string]bool{},
	}
}

func analyze(h history.History) (*analysis, error) {
	ops, err := history.Pairs(h)
	if err != nil {
		return nil, err
	}
	a := &analysis{ops: ops, produces: map[string]*produced{}, parts: map[history.TP]*partLog{}}
	for i, op := range ops {
		switch op.Invoke.F {
		case history.Produce:
			a.addProduce(i, op)
		case history.Poll, history.Fetch, history.Read:
			a.addRead(op)
		}
	}
	for _, p := range a.parts {
		for off := range p.truth {
			p.known = append(p.known, off)
		}
		sort.Slice(p.known, func(i, j int) bool { return p.known[i] < p.known[j] })
	}
	return a, nil
}

func (a *analysis) part(tp history.TP) *partLog {
	p := a.parts[tp]
	if p == nil {
		p = newPartLog(tp)
		a.parts[tp] = p
	}
	return p
}

// sortedTPs returns the partitions in a fixed order.
func (a *analysis) sortedTPs() []history.TP {
	tps := make([]history.TP, 0, len(a.parts))
	for tp := range a.parts {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool { return tps[i].Less(tps[j]) })
	return tps
}

func (a *analysis) addProduce(i int, op history.Operation) {
	acked := op.Acked()
	acks := map[string]int64{}
	if acked {
		for _, r := range op.Done.Records {
			acks[r.Value] = r.Offset
		}
	}
	for _, r := range op.Invoke.Records {
		pr := &produced{op: i, tp: r.TP(), acked: acked, ackOffset: -1, idempotent: !op.Invoke.NotIdempotent}
		if off, ok := acks[r.Value]; ok && off >= 0 {
			pr.ackOffset = off
			a.observe(r.TP(), off, r.Value, op.Done.Index, fromAck)
		}
		a.produces[r.Value] = pr
		a.part(r.TP())
	}
}

func (a *analysis) addRead(op history.Operation) {
	if op.Done.Type != history.OK {
		return
	}
	src := fromRead
	if op.Invoke.F == history.Read {
		src = fromFinal
	}
	for _, r := range op.Done.Records {
		a.observe(r.TP(), r.Offset, r.Value, op.Done.Index, src)
		p := a.parts[r.TP()]
		offs := p.readOffs[r.Value]
		if offs == nil {
			offs = map[int64]bool{}
			p.readOffs[r.Value] = offs
		}
		offs[r.Offset] = true
		if src == fromFinal {
			p.finalVals[r.Value] = true
		}
		if op.Invoke.F == history.Poll {
			p.polledVals[r.Value] = true
		}
	}
	if op.Invoke.F == history.Read {
		p := a.part(op.TP())
		p.hasFinal = true
		for _, hw := range op.Done.HWMs {
			p.finalHWM = max(p.finalHWM, hw.Offset)
		}
	}
}

func (a *analysis) observe(tp history.TP, off int64, value string, event int64, src source) {
	p := a.part(tp)
	vals := p.seen[off]
	if vals == nil {
		vals = map[string][]int64{}
		p.seen[off] = vals
	}
	vals[value] = append(vals[value], event)
	if prev, ok := p.truthFrom[off]; !ok || src > prev {
		p.truth[off], p.truthFrom[off] = value, src
	}
}

// knownIn reports whether truth holds any offset in [from, to).
func (p *partLog) knownIn(from, to int64) bool {
	i := sort.Search(len(p.known), func(i int) bool { return p.known[i] >= from })
	return i < len(p.known) && p.known[i] < to
}

// nextKnown returns the smallest known offset above off, or -1.
func (p *partLog) nextKnown(off int64) int64 {
	i := sort.Search(len(p.known), func(i int) bool { return p.known[i] > off })
	if i == len(p.known) {
		return -1
	}
	return p.known[i]
}

// sortedValues returns the keys of a value set in a fixed order.
func sortedValues[V any](m map[string]V) []string { return sortedKeys(m) }

func sortedOffsets[V any](m map[int64]V) []int64 {
	offs := make([]int64, 0, len(m))
	for o := range m {
		offs = append(offs, o)
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	return offs
}
