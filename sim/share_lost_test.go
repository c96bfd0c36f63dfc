package sim

import (
	"math/rand"
	"testing"
	"time"
)

// The history of --all-faults seed 3006559 on f5ebfc6 (delivery limit 2),
// as its trace and the coordinator's acquisitions show it: member m0-4
// sends a ShareFetch at 4.705s, which its client gives up on at 5.165s
// (request timeout) while the coordinator, its remote read of the other
// partition unanswered, is still serving it. m0-4's next fetch, sent at
// 5.404s, is handed simshare/0 offsets 18 and 19 with count 1; the
// consumer crashes; their lock runs out at 5.794s, and at 5.807s the
// coordinator, its read timed out, acquires them for the first fetch,
// with count 2. No client ever sees that delivery; its lock runs out at
// the limit and both are dead-lettered at count 2. The checker took the
// lost fetch to have acquired nothing after its client timed out, and
// failed the seed with skipped.
func TestShareLostFetchServedAfterClientTimeout(t *testing.T) {
	r, w := shareCheckRun(t)
	w.final = map[int32]int64{0: 20}
	at(r, 4705453790)
	lostSent, lostReq := r.now(), w.nextReq()
	at(r, 5165453790)
	w.lostFetch("m0-4", lostReq, lostSent+shareServeReach)
	at(r, 5403793666)
	sent, req := r.now(), w.nextReq()
	at(r, 5460875573)
	for off := int64(0); off < 20; off++ {
		w.handedOut(0, off, 1, "m0-4", req, sent)
		if off < 18 {
			w.rec(0, off).accepted = 1
		}
	}
	if n, first := w.unfinished(); n != 0 {
		t.Fatalf("%d unfinished, first %s; want none: the lost fetch may have delivered 18 and 19 again, at the limit", n, first)
	}
}

// A fetch lost longer than shareServeReach before a record was handed out
// cannot have delivered it again: the record is not finished.
func TestShareLostFetchBeyondReach(t *testing.T) {
	r, w := shareCheckRun(t)
	w.final = map[int32]int64{0: 1}
	at(r, time.Millisecond)
	lostSent, lostReq := r.now(), w.nextReq()
	at(r, 500*time.Millisecond)
	w.lostFetch("m0-1", lostReq, lostSent+shareServeReach)
	at(r, lostSent+shareServeReach+time.Millisecond)
	w.handedOut(0, 0, 1, "m0-1", w.nextReq(), r.now())
	if n, _ := w.unfinished(); n != 1 {
		t.Fatalf("%d unfinished, want 1: no lost fetch could have delivered offset 0 again", n)
	}
}

// lostSince, which finishShare's check runs at every event by binary
// search, counts what a scan of every lost fetch counts, whatever order
// the fetches are lost in: a lost fetch's time is its answer's or, for
// one never answered, its send plus shareServeReach, so a later loss can
// carry an earlier time.
func TestShareLostSinceAgainstModel(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		r, w := shareCheckRun(t)
		rng := rand.New(rand.NewSource(seed))
		var model []time.Duration // in the order lost
		for i := 0; i < 200; i++ {
			at(r, r.now()+time.Duration(rng.Intn(3))*100*time.Millisecond)
			until := r.now()
			if rng.Intn(2) == 0 { // never answered: its send plus the reach
				until = r.now() - time.Duration(rng.Intn(20))*100*time.Millisecond + shareServeReach
			}
			w.lostFetch("m0-1", w.nextReq(), until)
			model = append(model, max(r.now(), until))
			for j := 0; j < 5; j++ {
				q := time.Duration(rng.Int63n(int64(r.now() + 2*shareServeReach)))
				if j == 0 {
					q = model[rng.Intn(len(model))] // on a lost fetch's time exactly
				}
				want := 0
				for _, l := range model {
					if l >= q {
						want++
					}
				}
				if got := w.lostSince(q); got != want {
					t.Fatalf("seed %d after %d lost fetches: lostSince(%v) = %d, want %d (times %v)", seed, i+1, q, got, want, model)
				}
			}
		}
	}
}

// allFinished, finishShare's question after every event, answers what
// unfinished's count answers, whatever happens between two questions: an
// offset finished by an accept, by lost fetches that may have taken it to
// the limit unseen, or no longer finished when it is handed out again
// later (a later delivery moves the time from which lost fetches count).
func TestShareAllFinishedAgainstScan(t *testing.T) {
	for seed := int64(1); seed <= 30; seed++ {
		r, w := shareCheckRun(t)
		w.limit = 4
		rng := rand.New(rand.NewSource(seed))
		w.final = map[int32]int64{0: int64(1 + rng.Intn(12)), 1: int64(rng.Intn(12))}
		for step := 0; step < 300; step++ {
			at(r, r.now()+time.Duration(rng.Intn(4))*200*time.Millisecond)
			part := int32(rng.Intn(shareParts))
			if w.final[part] == 0 {
				continue
			}
			off := rng.Int63n(w.final[part])
			sr := w.rec(part, off)
			switch op := rng.Intn(10); {
			case op < 5 && sr.accepted == 0 && sr.rejected == 0 && sr.maxCount < w.limit:
				w.handedOut(part, off, sr.maxCount+1, "m0-1", w.nextReq(), r.now())
			case op < 7:
				w.lostFetch("m0-1", w.nextReq(), r.now()+time.Duration(rng.Intn(2))*shareServeReach)
			case op < 8 && sr.maxCount > 0:
				sr.accepted = sr.maxCount
			}
			n, first := w.unfinished()
			if got := w.allFinished(); got != (n == 0) {
				t.Fatalf("seed %d step %d: allFinished %v with %d unfinished (first %s)", seed, step, got, n, first)
			}
		}
		if vs := r.violations; len(vs) > 0 {
			t.Fatalf("seed %d: the scripted history broke the checker's rules: %v", seed, vs)
		}
	}
}
