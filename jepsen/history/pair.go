package history

import (
	"fmt"
	"math"
)

// Never is the completion time of an operation that never completed: it
// stays concurrent with everything after its invoke.
const Never int64 = math.MaxInt64

// Operation is an operation as checkers see it: the invoke and its
// completion. For an invoke that never completed, Done is a synthesized
// info event with Index -1 and Time Never. For the single-event functions
// (Assign, Nemesis), Invoke and Done are the same event.
type Operation struct {
	Invoke Op
	Done   Op
}

// TP returns the topic-partition of a produce, fetch or read.
func (o Operation) TP() TP {
	if len(o.Invoke.Records) > 0 {
		return o.Invoke.Records[0].TP()
	}
	if len(o.Invoke.Offsets) > 0 {
		return o.Invoke.Offsets[0].TP()
	}
	return TP{}
}

// Acked reports whether the operation certainly happened: it completed ok,
// and for a produce, with the acks=all promise.
func (o Operation) Acked() bool {
	return o.Done.Type == OK && !(o.Invoke.F == Produce && (o.Invoke.NotDurable || o.Done.NotDurable))
}

// Pairs matches each invoke with its completion and checks the history is
// well formed (see Validate). Operations come out in the order of their
// invokes.
func Pairs(h History) ([]Operation, error) {
	var ops []Operation
	if len(h) > 0 {
		ops = make([]Operation, 0, (len(h)+1)/2) // an invoke and its completion make one
	}
	open := map[int64]int{} // process -> index in ops of its running operation
	values := map[string]int64{}
	var lastTime int64 = math.MinInt64
	for i, e := range h {
		if e.Index != int64(i) {
			return nil, fmt.Errorf("event %d has index %d", i, e.Index)
		}
		if e.Time < lastTime {
			return nil, fmt.Errorf("event %d: time %d goes back from %d", i, e.Time, lastTime)
		}
		lastTime = e.Time
		if err := checkShape(e); err != nil {
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
		switch {
		case e.F == Assign || e.F == Nemesis:
			ops = append(ops, Operation{Invoke: e, Done: e})
		case e.Type == Invoke:
			if j, busy := open[e.Process]; busy {
				return nil, fmt.Errorf("event %d: process %d invokes while event %d is running", i, e.Process, ops[j].Invoke.Index)
			}
			if err := claimValues(values, e); err != nil {
				return nil, fmt.Errorf("event %d: %w", i, err)
			}
			open[e.Process] = len(ops)
			ops = append(ops, Operation{Invoke: e})
		default:
			j, busy := open[e.Process]
			if !busy {
				return nil, fmt.Errorf("event %d: process %d completes nothing", i, e.Process)
			}
			if ops[j].Invoke.F != e.F {
				return nil, fmt.Errorf("event %d: %s completes a %s", i, e.F, ops[j].Invoke.F)
			}
			ops[j].Done = e
			delete(open, e.Process)
		}
	}
	for _, j := range open {
		inv := ops[j].Invoke
		done := inv
		done.Index, done.Type, done.Time, done.Error = -1, Info, Never, "never completed"
		ops[j].Done = done
	}
	return ops, nil
}

// Validate reports the first way h is malformed: indexes not 0, 1, 2, ...;
// time going back; unknown types or functions; a process invoking while it
// runs an operation, or completing none, or completing another function; a
// produce or fetch spanning several partitions; a value produced twice.
func Validate(h History) error {
	_, err := Pairs(h)
	return err
}

func checkShape(e Op) error {
	switch e.Type {
	case Invoke, OK, Fail, Info:
	default:
		return fmt.Errorf("unknown type %q", e.Type)
	}
	switch e.F {
	case Produce:
		return onePartition(e)
	case Txn:
		if e.Type == Invoke && len(e.Records) == 0 {
			return fmt.Errorf("txn with no records")
		}
		return nil
	case TxnRead, TxnFinal:
		if e.Type == Invoke && (e.Isolation != ReadCommitted && e.Isolation != ReadUncommitted || e.F == TxnFinal && e.Isolation != ReadCommitted) {
			return fmt.Errorf("%s with isolation %q", e.F, e.Isolation)
		}
		fallthrough
	case Fetch, Read:
		if len(e.Offsets) != 1 && e.Type == Invoke {
			return fmt.Errorf("%s invoke needs exactly one start offset, has %d", e.F, len(e.Offsets))
		}
		return onePartition(e)
	case Poll, Commit, FetchOffset:
		return nil
	case TxnOffsets, TxnOffsetsFinal:
		if e.Type == Invoke && e.Group == "" {
			return fmt.Errorf("%s with no group", e.F)
		}
		return nil
	case Assign:
		if e.Type != OK {
			return fmt.Errorf("assign is a single ok event, got %s", e.Type)
		}
		return nil
	case Nemesis:
		if e.Type != Info {
			return fmt.Errorf("nemesis is a single info event, got %s", e.Type)
		}
		return nil
	default:
		return fmt.Errorf("unknown function %q", e.F)
	}
}

// onePartition checks that a produce's or fetch's records and offsets name
// one topic-partition, and that a produce has records.
func onePartition(e Op) error {
	if e.F == Produce && e.Type == Invoke && len(e.Records) == 0 {
		return fmt.Errorf("produce with no records")
	}
	// The first topic-partition named, in the order records, offsets,
	// HWMs, LSOs, and the first one that differs from it (without
	// collecting them: a read's records may number thousands).
	var first TP
	have := false
	check := func(tp TP) error {
		if !have {
			first, have = tp, true
			return nil
		}
		if tp != first {
			return fmt.Errorf("%s spans %s and %s", e.F, first, tp)
		}
		return nil
	}
	for _, r := range e.Records {
		if err := check(r.TP()); err != nil {
			return err
		}
	}
	for _, o := range e.Offsets {
		if err := check(o.TP()); err != nil {
			return err
		}
	}
	for _, o := range e.HWMs {
		if err := check(o.TP()); err != nil {
			return err
		}
	}
	for _, o := range e.LSOs {
		if err := check(o.TP()); err != nil {
			return err
		}
	}
	return nil
}

func claimValues(values map[string]int64, e Op) error {
	if e.F != Produce && e.F != Txn {
		return nil
	}
	for _, r := range e.Records {
		if prev, dup := values[r.Value]; dup {
			return fmt.Errorf("value %q already produced by event %d: values must be unique", r.Value, prev)
		}
		values[r.Value] = e.Index
	}
	return nil
}
