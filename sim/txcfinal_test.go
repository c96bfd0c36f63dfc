package sim

import (
	"testing"
	"time"

	"github.com/floe-broker/floe/netx"
)

func txcFinalReadRun() *txcWorkload {
	r := finalReadRun()
	r.inv = newInvariants(r)
	r.o.LivenessMax = 30 * time.Second
	w := &txcWorkload{r: r, rng: r.rng}
	r.txc = w
	return w
}

func txcCheckRead(t *testing.T, recs []decodedRecord, ok bool, log []string, fetches int) {
	t.Helper()
	if !ok || len(recs) != len(log) {
		t.Fatalf("final read ok=%v with %d records after %d fetches, want all %d", ok, len(recs), fetches, len(log))
	}
	for i, rec := range recs {
		if rec.offset != int64(i) || rec.value != log[i] {
			t.Fatalf("record %d is %+v, want offset %d value %s", i, rec, i, log[i])
		}
	}
}

// Long seed 3800026 (found on c5302f3): simtxc's final read_committed read
// (23,987 offsets, some 130 fetches) started over from offset 0 on every
// failed fetch and every empty answer (BUGGIFY's fetch-not-leader,
// fetch-empty, lease-early-expiry: about 4.5% of fetches): for 30 s no pass
// (137 of them) reached the high watermark, and the run reported the
// topic "not read read_committed to its high watermark (no transaction
// open)" with the last stable offset at the high watermark all along. Here
// the leader fails every 20th fetch of a log that takes 100 and answers
// every 15th with no records: the read must keep what it read and go on
// from there.
func TestTxcFinalReadKeepsProgressOverFailedFetches(t *testing.T) {
	w := txcFinalReadRun()
	log := fakeLog(10_000, "v")
	f := &fakeLogs{r: w.r, logs: map[netx.NodeID][]string{1: log}, chunk: 100,
		leader: func(int) netx.NodeID { return 1 }, fails: func(n int) bool { return n%20 == 0 },
		empty: func(n int) bool { return n%15 == 0 }}
	recs, _, ok := w.readAll(f.txcFetch, true)
	txcCheckRead(t, recs, ok, log, f.fetches)
	if len(w.r.violations) > 0 {
		t.Fatalf("violations: %v", w.r.violations)
	}
}

// The read never stitches two brokers' copies (each compacts its own):
// when another broker answers after a failure, the read starts over from
// the log start there.
func TestTxcFinalReadStartsOverOnAnotherBroker(t *testing.T) {
	w := txcFinalReadRun()
	a, b := fakeLog(1_000, "a"), fakeLog(1_200, "b")
	f := &fakeLogs{r: w.r, logs: map[netx.NodeID][]string{1: a, 2: b}, chunk: 100,
		leader: func(n int) netx.NodeID {
			if n <= 5 {
				return 1
			}
			return 2
		},
		fails: func(n int) bool { return n == 5 }}
	recs, _, ok := w.readAll(f.txcFetch, true)
	txcCheckRead(t, recs, ok, b, f.fetches)
}
