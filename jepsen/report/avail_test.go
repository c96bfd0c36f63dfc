package report

import (
	"testing"
	"time"

	"github.com/floe-broker/floe/jepsen/history"
	"github.com/floe-broker/floe/jepsen/nemesis"
)

// Produces at known times, one fault window: the fractions count
// acknowledgements within 1 s by where the attempt began, and the gap is
// the longest stretch between acknowledgements of one partition.
func TestMeasureAvailability(t *testing.T) {
	var now int64
	rec := history.NewRecorder(nil, func() int64 { return now })
	s := time.Second
	invoke := func(at time.Duration, part int32, v string) history.Op {
		now = int64(at)
		r := []history.Record{{Topic: "j", Partition: part, Offset: -1, Value: v}}
		return rec.Invoke(history.Op{Process: int64(part) + 1, F: history.Produce, Records: r})
	}
	complete := func(at time.Duration, inv history.Op, typ history.Type) {
		now = int64(at)
		rec.Complete(inv, typ, history.Op{Records: inv.Records})
	}
	complete(s/10, invoke(0, 0, "a"), history.OK)        // outside, ok
	complete(6*s/10, invoke(s/2, 1, "b"), history.OK)    // outside, ok
	c := invoke(2*s, 0, "c")                             // inside, too slow
	complete(31*s/10, invoke(3*s, 1, "d"), history.Info) // inside, failed
	complete(41*s/10, invoke(4*s, 1, "e"), history.OK)   // inside, ok
	complete(5*s, c, history.OK)
	complete(61*s/10, invoke(6*s, 0, "f"), history.OK) // outside, ok
	tl := []nemesis.Event{{Kind: nemesis.Kill, Start: int64(2 * s), End: int64(5 * s)}}
	a := Measure(rec.History(), tl)
	if a.Outside != (Fraction{3, 3}) || a.Inside != (Fraction{1, 3}) {
		t.Fatalf("outside %v inside %v, want 3 of 3 and 1 of 3", a.Outside, a.Inside)
	}
	if len(a.Gaps) != 2 {
		t.Fatalf("gaps %+v", a.Gaps)
	}
	// Partition 0: acks at 0.1, 5, 6.1 s, run from 0 to 6.1 s: 4.9 s.
	// Partition 1: acks at 0.6, 4.1 s: from 0.6 to 4.1 s, 3.5 s; then to 6.1, 2 s.
	if g := a.Gaps[0]; g.Partition != 0 || g.Len() != 49*s/10 {
		t.Errorf("partition 0 gap %+v (%v)", g, g.Len())
	}
	if g := a.Gaps[1]; g.Partition != 1 || g.Len() != 35*s/10 {
		t.Errorf("partition 1 gap %+v (%v)", g, g.Len())
	}
}
