package sim

import (
	"strings"
	"testing"
	"time"
)

// Long seed 3600042 --all-faults (found on b32a1d6): `txn lost-write
// invalid: T400 was committed; 2 of its 4 values are visible`. The zombie
// producer had written T400 to simtxn-0 and simtxn-1 and paused; the
// coordinator, whose partition changed leaders about every second, gave
// the transaction a full timeout again at each move, so it never timed
// out, and the heal gave up waiting for the zombie. The final read then
// read simtxn-2 in full (no transaction open there) and never again; the
// zombie resumed, wrote T400 to simtxn-2 and committed (rightly: the
// transaction was still open), and the reads of simtxn-0 and simtxn-1,
// held back by the open transaction, found its values there. Here a
// producer still running when the final read begins adds partition 2 to
// its open transaction and commits 3 s later: the read must wait for it.
func TestTxnFinalReadWaitsForProducers(t *testing.T) {
	r := finalReadRun()
	r.inv = newInvariants(r)
	r.o.LivenessMax = 30 * time.Second
	r.stopping = true
	w := &txnWorkload{r: r, ready: true, leaders: nil, readDuring: map[string]bool{},
		maxLSO: map[int32]int64{}, readAt: map[int32]int64{}, running: 1}
	r.txn = w
	t1 := &txnRec{name: "T1", producer: "txz", values: map[int32][]string{0: {"T1.0.0"}, 2: {"T1.2.0"}}}
	w.txns = []*txnRec{t1}
	// Each partition's committed values, high watermark and last stable
	// offset: T1.0.0 is open on partition 0 (offset 0), nothing yet on 1
	// and 2.
	type part struct {
		vals    []string
		hw, lso int64
	}
	parts := map[int32]*part{0: {hw: 1, lso: 0}, 1: {}, 2: {}}
	r.w.After(3*time.Second, func() {
		// The producer resumes: T1.2.0 at offset 0 of partition 2, then
		// the commit markers on 0 (offset 1) and 2 (offset 1); it stops.
		parts[0].vals, parts[0].hw, parts[0].lso = []string{"T1.0.0"}, 2, 2
		parts[2].vals, parts[2].hw, parts[2].lso = []string{"T1.2.0"}, 2, 2
		t1.outcome = txnCommitted
		w.running--
	})
	fetch := func(pt int32, offset int64, done func(ok bool, vals []string, next, lso, hw int64)) {
		p := parts[pt]
		vals, hw, lso := p.vals, p.hw, p.lso
		if offset > 0 {
			vals = nil
		}
		r.w.After(time.Millisecond, func() { done(true, vals, hw, lso, hw) })
	}
	r.finishTxnWith(w, fetch)
	if len(r.violations) > 0 {
		t.Fatalf("violations:\n\t%s", strings.Join(r.violations, "\n\t"))
	}
	if r.now() < 3*time.Second {
		t.Fatalf("the final read ended at %v, before the producer stopped (3s)", r.now())
	}
}
