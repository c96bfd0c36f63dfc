package kafka

import (
	"math/rand"
	"slices"
	"testing"
)

// TestInOrderAgainstModel drives InOrder with random reserves, fills in
// random order and releases, and checks each step against a naive model:
// a list of (value, filled) in arrival order.
func TestInOrderAgainstModel(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewSource(seed))
		max := 1 + rng.Intn(6)
		q := NewInOrder[int](max)
		type entry struct {
			v      int
			ticket uint64
			filled bool
		}
		var model []entry
		var released []int
		next := 0
		for step := 0; step < 400; step++ {
			switch op := rng.Intn(4); {
			case op == 0: // reserve
				ticket, ok := q.Reserve(next)
				if want := len(model) < max; ok != want {
					t.Fatalf("seed %d step %d: Reserve ok %v with %d of %d reserved", seed, step, ok, len(model), max)
				}
				if ok {
					model = append(model, entry{v: next, ticket: ticket})
					next++
				}
			case op == 1 && len(model) > 0: // fill a random slot, maybe twice
				i := rng.Intn(len(model))
				head, ok := q.Fill(model[i].ticket)
				if ok == model[i].filled {
					t.Fatalf("seed %d step %d: Fill of slot %d ok %v, filled before %v", seed, step, i, ok, model[i].filled)
				}
				if ok && head != (i == 0) {
					t.Fatalf("seed %d step %d: Fill of slot %d says head %v", seed, step, i, head)
				}
				model[i].filled = true
			case op == 2: // release the ready prefix, or part of it
				var want []int
				for _, e := range model {
					if !e.filled {
						break
					}
					want = append(want, e.v)
				}
				got := q.ReadyHead(nil)
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: ReadyHead %v, model %v", seed, step, got, want)
				}
				n := 0
				if len(got) > 0 {
					n = rng.Intn(len(got) + 1)
				}
				q.Release(n)
				released = append(released, got[:n]...)
				model = model[n:]
			case op == 3 && rng.Intn(20) == 0: // a released or unknown ticket
				if _, ok := q.Fill(uint64(next) + 100); ok {
					t.Fatalf("seed %d step %d: Fill of a ticket never reserved succeeded", seed, step)
				}
				if len(released) > 0 {
					if _, ok := q.Fill(0); ok && len(released) > 0 {
						t.Fatalf("seed %d step %d: Fill of a released ticket succeeded", seed, step)
					}
				}
			}
			if q.Len() != len(model) || q.Full() != (len(model) == max) {
				t.Fatalf("seed %d step %d: Len %d Full %v, model %d of %d", seed, step, q.Len(), q.Full(), len(model), max)
			}
		}
		// Released values came out in arrival order, each once.
		for i, v := range released {
			if v != i {
				t.Fatalf("seed %d: released %v, not in arrival order", seed, released)
			}
		}
		rest := q.TakeAll(nil)
		if q.Len() != 0 || len(rest) != len(model) {
			t.Fatalf("seed %d: TakeAll left %d, returned %d of %d", seed, q.Len(), len(rest), len(model))
		}
	}
}
