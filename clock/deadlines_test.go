package clock

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestDeadlinesFireInOrderWithTies(t *testing.T) {
	q := NewDeadlines()
	var got []string
	rec := func(s string) func() { return func() { got = append(got, s) } }
	q.Add(30, rec("c"))
	q.Add(10, rec("a1"))
	q.Add(20, rec("b"))
	q.Add(10, rec("a2"))
	q.Add(40, rec("d"))

	if at, ok := q.Next(); !ok || at != 10 {
		t.Fatalf("Next = %v %v, want 10 true", at, ok)
	}
	if n := q.Fire(9); n != 0 || len(got) != 0 {
		t.Fatalf("Fire before any deadline ran %d", n)
	}
	if n := q.Fire(30); n != 4 {
		t.Fatalf("Fire(30) ran %d, want 4", n)
	}
	if want := []string{"a1", "a2", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("order %q, want %q", got, want)
	}
	if at, ok := q.Next(); !ok || at != 40 || q.Len() != 1 {
		t.Fatalf("Next = %v %v len %d, want 40 true 1", at, ok, q.Len())
	}
	q.Fire(100)
	if _, ok := q.Next(); ok {
		t.Fatal("Next reported a deadline on an empty queue")
	}
}

func TestDeadlinesCancel(t *testing.T) {
	q := NewDeadlines()
	ran := map[string]bool{}
	a := q.Add(10, func() { ran["a"] = true })
	b := q.Add(5, func() { ran["b"] = true })
	if !q.Cancel(b) {
		t.Fatal("Cancel of a pending timer failed")
	}
	if q.Cancel(b) {
		t.Fatal("second Cancel reported success")
	}
	if q.Cancel(TimerID(999)) || q.Cancel(0) {
		t.Fatal("Cancel of an unknown id reported success")
	}
	if at, _ := q.Next(); at != 10 {
		t.Fatalf("cancelled timer still heads the queue: Next=%v", at)
	}
	q.Fire(10)
	if !ran["a"] || ran["b"] {
		t.Fatalf("ran %v, want only a", ran)
	}
	if q.Cancel(a) {
		t.Fatal("Cancel of a timer that already ran reported success")
	}
}

func TestDeadlinesCancelAndAddDuringFire(t *testing.T) {
	q := NewDeadlines()
	var got []string
	var self, victim, later TimerID
	self = q.Add(1, func() {
		got = append(got, "first")
		if q.Cancel(self) {
			t.Error("a running timer cancelled itself")
		}
		if !q.Cancel(victim) {
			t.Error("could not cancel a timer due in the same Fire")
		}
		if !q.Cancel(later) {
			t.Error("could not cancel a timer due later")
		}
		q.Add(0, func() { got = append(got, "added-due") })
		q.Add(50, func() { got = append(got, "added-late") })
	})
	victim = q.Add(2, func() { got = append(got, "victim") })
	later = q.Add(20, func() { got = append(got, "later") })
	q.Add(3, func() { got = append(got, "third") })

	if n := q.Fire(10); n != 2 {
		t.Fatalf("Fire ran %d, want 2 (first, third)", n)
	}
	if want := []string{"first", "third"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	// The timer added during Fire, already due, waits for the next Fire.
	if at, ok := q.Next(); !ok || at != 0 {
		t.Fatalf("Next = %v %v, want 0 true", at, ok)
	}
	q.Fire(10)
	q.Fire(100)
	if want := []string{"first", "third", "added-due", "added-late"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestDeadlinesSelfRearmingTimerDoesNotSpin(t *testing.T) {
	q := NewDeadlines()
	count := 0
	var arm func()
	arm = func() { count++; q.Add(0, arm) }
	q.Add(0, arm)
	for range 3 {
		if n := q.Fire(0); n != 1 {
			t.Fatalf("Fire ran %d, want 1", n)
		}
	}
	if count != 3 {
		t.Fatalf("count %d, want 3", count)
	}
}

func TestDeadlinesNilFn(t *testing.T) {
	q := NewDeadlines()
	q.Add(5, nil)
	if n := q.Fire(5); n != 1 {
		t.Fatalf("nil-fn timer: Fire ran %d", n)
	}
}

// TestDeadlinesMatchesReference runs random Add/Cancel/Fire sequences against
// a slice model that sorts on every Fire.
func TestDeadlinesMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		type mtimer struct {
			at time.Duration
			id TimerID
		}
		var model []mtimer
		q := NewDeadlines()
		var got []TimerID
		var ids []TimerID
		now := time.Duration(0)
		for step := range rapid.IntRange(1, 60).Draw(t, "steps") {
			switch rapid.IntRange(0, 2).Draw(t, fmt.Sprint("op", step)) {
			case 0:
				at := now + time.Duration(rapid.IntRange(-3, 30).Draw(t, "at"))
				var id TimerID
				id = q.Add(at, func() { got = append(got, id) })
				model = append(model, mtimer{at, id})
				ids = append(ids, id)
			case 1:
				if len(ids) == 0 {
					continue
				}
				id := rapid.SampledFrom(ids).Draw(t, "cancel")
				i := slices.IndexFunc(model, func(m mtimer) bool { return m.id == id })
				if ok := q.Cancel(id); ok != (i >= 0) {
					t.Fatalf("Cancel(%d) = %v, model has it: %v", id, ok, i >= 0)
				}
				if i >= 0 {
					model = slices.Delete(model, i, i+1)
				}
			case 2:
				now += time.Duration(rapid.IntRange(0, 15).Draw(t, "advance"))
				got = got[:0]
				n := q.Fire(now)
				slices.SortFunc(model, func(a, b mtimer) int {
					if a.at != b.at {
						return int(a.at - b.at)
					}
					return int(a.id) - int(b.id)
				})
				var want []TimerID
				for len(model) > 0 && model[0].at <= now {
					want = append(want, model[0].id)
					model = model[1:]
				}
				if n != len(want) || !slices.Equal(got, want) {
					t.Fatalf("Fire(%v) ran %v (n=%d), model %v", now, got, n, want)
				}
			}
			if q.Len() != len(model) {
				t.Fatalf("Len %d, model %d", q.Len(), len(model))
			}
			at, ok := q.Next()
			if ok != (len(model) > 0) {
				t.Fatalf("Next ok=%v with %d in model", ok, len(model))
			}
			if ok {
				minAt := slices.MinFunc(model, func(a, b mtimer) int { return int(a.at - b.at) }).at
				if at != minAt {
					t.Fatalf("Next %v, model %v", at, minAt)
				}
			}
		}
	})
}
