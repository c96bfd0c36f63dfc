package sim

import (
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
