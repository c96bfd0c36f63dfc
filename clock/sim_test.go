package clock

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var epoch = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// recorder collects a trace of labelled events with the time each ran.
type recorder struct {
	s   *Sim
	log []string
}

func (r *recorder) ev(label string) func() {
	return func() { r.log = append(r.log, fmt.Sprintf("%s@%v", label, r.s.Monotonic())) }
}

func (r *recorder) String() string { return strings.Join(r.log, " ") }

func TestSimOrdersByTimeThenSchedulingOrder(t *testing.T) {
	s := NewSim(epoch)
	r := &recorder{s: s}
	s.After(3*time.Second, r.ev("c"))
	s.After(time.Second, r.ev("a1"))
	s.At(2*time.Second, r.ev("b"))
	s.After(time.Second, r.ev("a2"))
	s.At(time.Second, r.ev("a3"))
	for s.Step() {
	}
	want := "a1@1s a2@1s a3@1s b@2s c@3s"
	if got := r.String(); got != want {
		t.Fatalf("order:\n got %s\nwant %s", got, want)
	}
	if s.Executed() != 5 || s.Pending() != 0 {
		t.Fatalf("executed=%d pending=%d, want 5 and 0", s.Executed(), s.Pending())
	}
}

func TestSimZeroDelayRunsAfterCurrentEventAtSameInstant(t *testing.T) {
	s := NewSim(epoch)
	r := &recorder{s: s}
	s.After(time.Second, func() {
		s.After(0, r.ev("zero"))
		s.After(-time.Hour, r.ev("negative"))
		s.At(0, r.ev("past"))
		r.log = append(r.log, "outer-end") // After never runs fn synchronously
	})
	s.After(time.Second, r.ev("sibling")) // scheduled earlier, so runs first
	for s.Step() {
	}
	want := "outer-end sibling@1s zero@1s negative@1s past@1s"
	if got := r.String(); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestSimStepOnEmptyHeap(t *testing.T) {
	s := NewSim(epoch)
	if s.Step() {
		t.Fatal("Step on an empty heap reported an event")
	}
	if s.Monotonic() != 0 || s.Executed() != 0 {
		t.Fatal("Step on an empty heap moved time or counted an event")
	}
}

func TestSimRunUntil(t *testing.T) {
	s := NewSim(epoch)
	r := &recorder{s: s}
	s.After(time.Second, r.ev("a"))
	s.After(2*time.Second, func() {
		r.log = append(r.log, fmt.Sprintf("b@%v", s.Monotonic()))
		s.After(0, r.ev("b-child"))             // due at 2s: runs in this RunUntil
		s.After(time.Second, r.ev("b-late"))    // due at 3s: inclusive bound, runs
		s.After(time.Second+1, r.ev("b-after")) // due just past 3s: stays pending
	})
	s.After(5*time.Second, r.ev("e"))

	s.RunUntil(3 * time.Second)
	if want := "a@1s b@2s b-child@2s b-late@3s"; r.String() != want {
		t.Fatalf("got  %s\nwant %s", r, want)
	}
	if s.Monotonic() != 3*time.Second {
		t.Fatalf("time after RunUntil(3s) = %v", s.Monotonic())
	}
	if !s.Now().Equal(epoch.Add(3 * time.Second)) {
		t.Fatalf("wall time %v, want start+3s", s.Now())
	}
	if s.Pending() != 2 {
		t.Fatalf("pending = %d, want 2", s.Pending())
	}

	// Time never goes backwards, and nothing is due by a past bound.
	s.After(0, r.ev("now"))
	s.RunUntil(time.Second)
	if s.Monotonic() != 3*time.Second {
		t.Fatalf("RunUntil into the past moved time to %v", s.Monotonic())
	}
	if strings.Contains(r.String(), "now@") {
		t.Fatalf("RunUntil(past) ran an event: %s", r)
	}
	s.RunUntil(s.Monotonic())
	if !strings.HasSuffix(r.String(), "now@3s") {
		t.Fatalf("RunUntil(now) did not run the event due now: %s", r)
	}

	// A quiet stretch still advances time to the bound.
	s.RunFor(10 * time.Second)
	if s.Monotonic() != 13*time.Second || s.Pending() != 0 {
		t.Fatalf("after RunFor: time %v pending %d", s.Monotonic(), s.Pending())
	}
	if !strings.HasSuffix(r.String(), "b-after@3.000000001s e@5s") {
		t.Fatalf("trace %s", r)
	}
}

func TestSimHookSeesEveryEventBeforeItRuns(t *testing.T) {
	s := NewSim(epoch)
	var trace []string
	s.SetHook(func(at time.Duration, seq uint64) {
		trace = append(trace, fmt.Sprintf("hook %v #%d", at, seq))
	})
	s.After(2*time.Second, func() { trace = append(trace, "run b") })
	s.After(time.Second, func() { trace = append(trace, "run a") })
	s.RunFor(time.Minute)
	want := []string{"hook 1s #1", "run a", "hook 2s #0", "run b"}
	if !slices.Equal(trace, want) {
		t.Fatalf("trace %q, want %q", trace, want)
	}
	s.SetHook(nil)
	s.After(0, func() {})
	s.Step() // must not call the removed hook
	if len(trace) != 4 {
		t.Fatalf("removed hook still called: %q", trace)
	}
}

func TestSimBadInput(t *testing.T) {
	s := NewSim(epoch)
	s.After(time.Second, nil)
	s.At(time.Second, nil)
	if s.Pending() != 0 {
		t.Fatal("nil fn was scheduled")
	}
	s.After(time.Second, func() {})
	s.Step()
	ran := false
	s.After(time.Duration(1<<63-1), func() { ran = true }) // would overflow
	s.RunFor(time.Duration(1<<63 - 1))
	if !ran {
		t.Fatal("far-future event did not run at the end of time")
	}
}

func TestSkewClock(t *testing.T) {
	s := NewSim(epoch)
	a, b := s.NodeClock(), s.NodeClock()
	a.SetOffset(-300 * time.Millisecond)
	s.RunFor(time.Second)
	if got, want := a.Now(), epoch.Add(700*time.Millisecond); !got.Equal(want) {
		t.Fatalf("skewed now %v, want %v", got, want)
	}
	if !b.Now().Equal(s.Now()) {
		t.Fatal("an unskewed node clock differs from the sim")
	}
	monoBefore := a.Monotonic()
	a.Jump(-time.Hour)
	if got, want := a.Now(), epoch.Add(700*time.Millisecond-time.Hour); !got.Equal(want) {
		t.Fatalf("after backward jump %v, want %v", got, want)
	}
	if a.Monotonic() != monoBefore || a.Monotonic() != s.Monotonic() {
		t.Fatal("a wall jump moved the monotonic clock")
	}
	if a.Offset() != -300*time.Millisecond-time.Hour {
		t.Fatalf("offset %v", a.Offset())
	}
	ranAt := time.Duration(-1)
	a.After(time.Second, func() { ranAt = s.Monotonic() })
	s.RunFor(2 * time.Second)
	if ranAt != 2*time.Second {
		t.Fatalf("SkewClock.After ran at %v, want 2s", ranAt)
	}
	var _ Clock = a
	var _ Scheduler = a
	var _ Clock = s
	var _ Scheduler = s
}

func TestRealMonotonicNeverDecreases(t *testing.T) {
	r := NewReal()
	prev := r.Monotonic()
	if prev < 0 {
		t.Fatalf("negative monotonic %v", prev)
	}
	for range 1000 {
		m := r.Monotonic()
		if m < prev {
			t.Fatalf("monotonic went back from %v to %v", prev, m)
		}
		prev = m
	}
	if r.Now().IsZero() {
		t.Fatal("zero wall time")
	}
	var _ Clock = r
}

// TestSimMatchesReference checks the event heap against an obviously correct
// model: a list sorted by (time, scheduling order), with events that schedule
// more events.
func TestSimMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		type spec struct {
			delay    time.Duration
			children []time.Duration
		}
		specs := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) spec {
			return spec{
				delay: time.Duration(rapid.IntRange(-2, 20).Draw(t, "delay")),
				children: rapid.Map(rapid.SliceOfN(rapid.IntRange(-2, 20), 0, 3),
					func(xs []int) []time.Duration {
						out := make([]time.Duration, len(xs))
						for i, x := range xs {
							out[i] = time.Duration(x)
						}
						return out
					}).Draw(t, "children"),
			}
		}), 0, 30).Draw(t, "events")
		bound := time.Duration(rapid.IntRange(0, 60).Draw(t, "bound"))

		// Model: pending list of (at, seq, label); run = pick min.
		type mev struct {
			at    time.Duration
			seq   int
			label string
			kids  []time.Duration
		}
		var pending []mev
		seq, now := 0, time.Duration(0)
		add := func(d time.Duration, label string, kids []time.Duration) {
			pending = append(pending, mev{now + max(d, 0), seq, label, kids})
			seq++
		}
		for i, sp := range specs {
			add(sp.delay, fmt.Sprint(i), sp.children)
		}
		var want []string
		for {
			slices.SortFunc(pending, func(a, b mev) int {
				if a.at != b.at {
					return int(a.at - b.at)
				}
				return a.seq - b.seq
			})
			if len(pending) == 0 || pending[0].at > bound {
				break
			}
			e := pending[0]
			pending = pending[1:]
			now = e.at
			want = append(want, fmt.Sprintf("%s@%d", e.label, now))
			for j, k := range e.kids {
				add(k, fmt.Sprintf("%s.%d", e.label, j), nil)
			}
		}

		s := NewSim(epoch)
		var got []string
		var schedule func(d time.Duration, label string, kids []time.Duration)
		schedule = func(d time.Duration, label string, kids []time.Duration) {
			s.After(d, func() {
				got = append(got, fmt.Sprintf("%s@%d", label, s.Monotonic()))
				for j, k := range kids {
					schedule(k, fmt.Sprintf("%s.%d", label, j), nil)
				}
			})
		}
		for i, sp := range specs {
			schedule(sp.delay, fmt.Sprint(i), sp.children)
		}
		s.RunUntil(bound)
		if !slices.Equal(got, want) {
			t.Fatalf("sim ran\n %q\nmodel ran\n %q", got, want)
		}
		if s.Pending() != len(pending) {
			t.Fatalf("pending %d, model %d", s.Pending(), len(pending))
		}
		if s.Monotonic() != max(bound, 0) {
			t.Fatalf("time %v after RunUntil(%v)", s.Monotonic(), bound)
		}
	})
}
