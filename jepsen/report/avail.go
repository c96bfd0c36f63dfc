package report

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/floe-broker/floe/jepsen/history"
	"github.com/floe-broker/floe/jepsen/nemesis"
)

// AvailabilityFile holds a run's Availability.
const AvailabilityFile = "availability.json"

// SuccessWithin is how soon a produce must be acknowledged to count as
// available.
const SuccessWithin = time.Second

// Availability is what clients saw of the cluster's availability in one
// run (issue 23): produce attempts acknowledged within SuccessWithin,
// split by whether they began inside a fault window, and the longest time
// each partition went without an acknowledged produce.
type Availability struct {
	Outside, Inside Fraction
	// Gaps: per partition of the produce topic, the longest interval
	// without an acknowledgement, from the first produce of the run to the
	// last (an attempt that never succeeded ends the last gap).
	Gaps []Gap
	// TxnOutside, TxnInside: transactions meant to commit whose commit
	// was acknowledged (at any latency), by where they began.
	TxnOutside, TxnInside Fraction
}

// Fraction is ok out of all.
type Fraction struct{ OK, All int }

func (f Fraction) String() string {
	if f.All == 0 {
		return "none"
	}
	return fmt.Sprintf("%.4f (%d of %d)", float64(f.OK)/float64(f.All), f.OK, f.All)
}

// Gap is a partition's longest interval without an acknowledged produce,
// in nanoseconds since the run began.
type Gap struct {
	Topic      string
	Partition  int32
	Start, End int64
}

// Len is the gap's length.
func (g Gap) Len() time.Duration { return time.Duration(g.End - g.Start) }

// Measure computes the availability figures of a history and the faults'
// timeline. An attempt is inside a fault window when it began between a
// fault's start and its heal.
func Measure(h history.History, timeline []nemesis.Event) Availability {
	var a Availability
	ops, err := history.Pairs(h)
	if err != nil {
		return a
	}
	inFault := func(t int64) bool {
		for _, ev := range timeline {
			if t >= ev.Start && (ev.End == 0 || t <= ev.End) {
				return true
			}
		}
		return false
	}
	first, last := int64(-1), int64(0)
	acks := map[history.TP][]int64{}
	for _, op := range ops {
		inv := op.Invoke
		switch {
		case inv.F == history.Produce:
			ok := op.Acked() && op.Done.Time-inv.Time <= int64(SuccessWithin)
			count(&a.Outside, &a.Inside, inFault(inv.Time), ok)
			if first < 0 {
				first = inv.Time
			}
			last = max(last, inv.Time)
			tp := op.TP()
			if _, seen := acks[tp]; !seen {
				acks[tp] = nil
			}
			if op.Acked() {
				acks[tp] = append(acks[tp], op.Done.Time)
				last = max(last, op.Done.Time)
			}
		case inv.F == history.Txn && !inv.Abort:
			ok := op.Done.Type == history.OK && !op.Done.Abort
			count(&a.TxnOutside, &a.TxnInside, inFault(inv.Time), ok)
		}
	}
	for tp, times := range acks {
		a.Gaps = append(a.Gaps, longestGap(tp, first, last, times))
	}
	sort.Slice(a.Gaps, func(i, j int) bool {
		return a.Gaps[i].Topic < a.Gaps[j].Topic || a.Gaps[i].Topic == a.Gaps[j].Topic && a.Gaps[i].Partition < a.Gaps[j].Partition
	})
	return a
}

func count(outside, inside *Fraction, in, ok bool) {
	f := outside
	if in {
		f = inside
	}
	f.All++
	if ok {
		f.OK++
	}
}

// longestGap is the longest interval between first, the acknowledgements
// and last.
func longestGap(tp history.TP, first, last int64, acks []int64) Gap {
	sort.Slice(acks, func(i, j int) bool { return acks[i] < acks[j] })
	g := Gap{Topic: tp.Topic, Partition: tp.Partition, Start: first, End: first}
	prev := first
	for _, t := range append(acks, last) {
		if t-prev > g.End-g.Start {
			g.Start, g.End = prev, t
		}
		prev = max(prev, t)
	}
	return g
}

// String is the summary's availability block.
func (a Availability) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "availability: produces acknowledged within %v: outside fault windows %s, inside %s\n",
		SuccessWithin, a.Outside, a.Inside)
	if a.TxnOutside.All+a.TxnInside.All > 0 {
		fmt.Fprintf(&b, "availability: transactions committed (of those meant to commit): outside fault windows %s, inside %s\n",
			a.TxnOutside, a.TxnInside)
	}
	for _, g := range a.Gaps {
		fmt.Fprintf(&b, "availability: %s/%d longest gap without an acknowledged produce %.1fs (%.1fs to %.1fs)\n",
			g.Topic, g.Partition, g.Len().Seconds(), float64(g.Start)/1e9, float64(g.End)/1e9)
	}
	return b.String()
}
