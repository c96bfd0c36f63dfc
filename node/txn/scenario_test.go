package txn

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// begin initializes id and opens a transaction on tps; it returns the
// producer id and epoch.
func (h *harness) begin(id string, tps ...TopicPartition) (int64, int16) {
	h.t.Helper()
	ir := h.init(id, 60000)
	h.mustOK("init", ir.err, ir.done)
	ar := h.add(id, ir.pid, ir.epoch, tps...)
	h.mustOK("add", ar.err, ar.done)
	return ir.pid, ir.epoch
}

func TestCommitSendsMarkersThenCompletes(t *testing.T) {
	h := newHarness(t, Config{})
	pid, epoch := h.begin("t1", tp("b", 1), tp("a", 0))
	if h.state("t1") != Ongoing {
		t.Fatalf("state %v, want Ongoing", h.state("t1"))
	}
	h.markers.hold = true
	er := h.end("t1", pid, epoch, true)
	h.mustOK("end", er.err, er.done)
	if h.state("t1") != PrepareCommit {
		t.Fatalf("state %v, want PrepareCommit while markers are out", h.state("t1"))
	}
	if r := h.add("t1", pid, epoch, tp("c", 0)); r.err != kerr.ConcurrentTransactions {
		t.Fatalf("add during markers: %v, want CONCURRENT_TRANSACTIONS", r.err)
	}
	h.markers.ackAll()
	if h.state("t1") != CompleteCommit {
		t.Fatalf("state %v, want CompleteCommit", h.state("t1"))
	}
	if len(h.markers.sent) != 1 {
		t.Fatalf("%d markers, want 1", len(h.markers.sent))
	}
	m := h.markers.sent[0]
	if !m.Commit || m.ProducerID != pid || m.ProducerEpoch != epoch || len(m.Partitions) != 2 || m.Partitions[0] != tp("a", 0) {
		t.Fatalf("marker %+v", m.Marker)
	}
	// A retried EndTxn(commit) succeeds; an abort of a committed one does not.
	if r := h.end("t1", pid, epoch, true); r.err != nil {
		t.Fatalf("retried commit: %v", r.err)
	}
	if r := h.end("t1", pid, epoch, false); r.err != kerr.InvalidTxnState {
		t.Fatalf("abort after commit: %v, want INVALID_TXN_STATE", r.err)
	}
	if st := h.c.Stats(); st.Commits != 1 || st.Starts != 1 {
		t.Fatalf("stats %+v, want 1 start and 1 commit", st)
	}
}

func TestMarkersWaitForDurableDecision(t *testing.T) {
	h := newHarness(t, Config{})
	pid, epoch := h.begin("t1", tp("a", 0))
	h.log.Hold = true
	er := h.end("t1", pid, epoch, true)
	if er.done || len(h.markers.tried) != 0 {
		t.Fatalf("answered %v or sent %d markers before PrepareCommit committed", er.done, len(h.markers.tried))
	}
	h.log.CommitAll()
	h.mustOK("end", er.err, er.done)
	h.log.CommitAll() // the CompleteCommit
	if len(h.markers.sent) != 1 || !h.markers.sent[0].durable {
		t.Fatalf("markers %+v", h.markers.sent)
	}
	if h.state("t1") != CompleteCommit {
		t.Fatalf("state %v", h.state("t1"))
	}
}

func TestFailedDecisionSendsNoMarker(t *testing.T) {
	h := newHarness(t, Config{})
	pid, epoch := h.begin("t1", tp("a", 0))
	h.log.Hold = true
	er := h.end("t1", pid, epoch, true)
	h.log.FailAll(kerr.NotLeaderForPartition)
	if !er.done || er.err != kerr.NotCoordinator {
		t.Fatalf("end: %+v, want NOT_COORDINATOR", er)
	}
	if len(h.markers.tried) != 0 || h.state("t1") != Ongoing {
		t.Fatalf("markers %d, state %v", len(h.markers.tried), h.state("t1"))
	}
}

func TestInitValidatesTimeout(t *testing.T) {
	h := newHarness(t, Config{MaxTimeout: time.Minute})
	for _, ms := range []int32{0, -1, 60001} {
		if r := h.init("t1", ms); r.err != kerr.InvalidTransactionTimeout {
			t.Fatalf("timeout %d: %v", ms, r.err)
		}
	}
	if _, ok := h.c.Describe("t1"); ok {
		t.Fatal("refused init left state")
	}
	if r := h.init("t1", 60000); r.err != nil || r.pid != 1000 || r.epoch != 0 {
		t.Fatalf("init: %+v", r)
	}
}

func TestInitFencesOpenTransaction(t *testing.T) {
	h := newHarness(t, Config{})
	pid, epoch := h.begin("t1", tp("a", 0))
	if r := h.init("t1", 60000); r.err != kerr.ConcurrentTransactions {
		t.Fatalf("init during txn: %v, want CONCURRENT_TRANSACTIONS", r.err)
	}
	if len(h.markers.sent) != 1 || h.markers.sent[0].Commit || h.markers.sent[0].ProducerEpoch != epoch+1 {
		t.Fatalf("want one abort marker at epoch %d: %+v", epoch+1, h.markers.sent)
	}
	if h.c.Stats().AbortsByFence != 1 {
		t.Fatalf("stats %+v", h.c.Stats())
	}
	// The zombie is fenced.
	if r := h.end("t1", pid, epoch, true); r.err != kerr.ProducerFenced {
		t.Fatalf("zombie end: %v, want PRODUCER_FENCED", r.err)
	}
	if r := h.add("t1", pid, epoch, tp("b", 0)); r.err != kerr.ProducerFenced {
		t.Fatalf("zombie add: %v, want PRODUCER_FENCED", r.err)
	}
	r := h.init("t1", 60000)
	h.mustOK("retried init", r.err, r.done)
	if r.pid != pid || r.epoch != epoch+2 {
		t.Fatalf("init: %d/%d, want %d/%d", r.pid, r.epoch, pid, epoch+2)
	}
}

func TestTimeoutAbortsAndFences(t *testing.T) {
	h := newHarness(t, Config{})
	ir := h.init("t1", 1000)
	h.mustOK("init", ir.err, ir.done)
	ar := h.add("t1", ir.pid, ir.epoch, tp("a", 0))
	h.mustOK("add", ar.err, ar.done)
	h.advance(999 * time.Millisecond)
	if h.state("t1") != Ongoing {
		t.Fatalf("aborted early: %v", h.state("t1"))
	}
	h.advance(time.Millisecond)
	if h.state("t1") != CompleteAbort || h.c.Stats().AbortsByTime != 1 {
		t.Fatalf("state %v stats %+v", h.state("t1"), h.c.Stats())
	}
	if r := h.end("t1", ir.pid, ir.epoch, true); r.err != kerr.ProducerFenced {
		t.Fatalf("end after timeout: %v, want PRODUCER_FENCED", r.err)
	}
}

func TestTimeoutOfOldTransactionSparesNewOne(t *testing.T) {
	h := newHarness(t, Config{})
	ir := h.init("t1", 1000)
	h.mustOK("init", ir.err, ir.done)
	h.mustOK("add", h.add("t1", ir.pid, ir.epoch, tp("a", 0)).err, true)
	h.advance(500 * time.Millisecond)
	h.mustOK("end", h.end("t1", ir.pid, ir.epoch, true).err, true)
	h.mustOK("add2", h.add("t1", ir.pid, ir.epoch, tp("a", 0)).err, true)
	h.advance(600 * time.Millisecond) // the first transaction's deadline passes
	if h.state("t1") != Ongoing {
		t.Fatalf("second transaction aborted by the first one's timer: %v", h.state("t1"))
	}
	h.advance(500 * time.Millisecond)
	if h.state("t1") != CompleteAbort {
		t.Fatalf("second transaction not timed out: %v", h.state("t1"))
	}
}

func TestFailoverCompletesPrepareCommit(t *testing.T) {
	h := newHarness(t, Config{})
	pid, epoch := h.begin("t1", tp("a", 0), tp("b", 0))
	h.markers.failWith = kerr.NotLeaderForPartition
	h.mustOK("end", h.end("t1", pid, epoch, true).err, true)
	if h.state("t1") != PrepareCommit {
		t.Fatalf("state %v", h.state("t1"))
	}
	h.failover()
	h.markers.failWith = nil
	h.advance(time.Second) // retry timers of the old coordinator are stale
	if h.state("t1") != CompleteCommit {
		t.Fatalf("after failover: %v", h.state("t1"))
	}
	last := h.markers.sent[len(h.markers.sent)-1]
	if !last.Commit || !last.durable || len(last.Partitions) != 2 {
		t.Fatalf("marker %+v", last)
	}
}

func TestMarkerRetriesUntilAcknowledged(t *testing.T) {
	h := newHarness(t, Config{RetryBackoff: 10 * time.Millisecond})
	pid, epoch := h.begin("t1", tp("a", 0))
	h.markers.failWith = kerr.RequestTimedOut
	h.mustOK("end", h.end("t1", pid, epoch, false).err, true)
	h.advance(35 * time.Millisecond)
	if n := len(h.markers.tried); n != 4 {
		t.Fatalf("%d attempts in 35ms at 10ms backoff, want 4", n)
	}
	h.markers.failWith = nil
	h.advance(10 * time.Millisecond)
	if h.state("t1") != CompleteAbort {
		t.Fatalf("state %v", h.state("t1"))
	}
}

func TestFailoverKeepsOngoingAndTimesItOut(t *testing.T) {
	h := newHarness(t, Config{})
	ir := h.init("t1", 1000)
	h.mustOK("add", h.add("t1", ir.pid, ir.epoch, tp("a", 0)).err, true)
	h.failover()
	if h.state("t1") != Ongoing {
		t.Fatalf("state %v", h.state("t1"))
	}
	h.mustOK("add after failover", h.add("t1", ir.pid, ir.epoch, tp("b", 0)).err, true)
	h.advance(1000 * time.Millisecond)
	if h.state("t1") != CompleteAbort {
		t.Fatalf("state %v", h.state("t1"))
	}
}

func TestConcurrentRequestsWhileWriting(t *testing.T) {
	h := newHarness(t, Config{})
	ir := h.init("t1", 60000)
	h.log.Hold = true
	a1 := h.add("t1", ir.pid, ir.epoch, tp("a", 0))
	if r := h.add("t1", ir.pid, ir.epoch, tp("b", 0)); r.err != kerr.ConcurrentTransactions {
		t.Fatalf("second add: %v", r.err)
	}
	if r := h.end("t1", ir.pid, ir.epoch, true); r.err != kerr.ConcurrentTransactions {
		t.Fatalf("end: %v", r.err)
	}
	if r := h.init("t1", 60000); r.err != kerr.ConcurrentTransactions {
		t.Fatalf("init: %v", r.err)
	}
	h.log.CommitAll()
	h.mustOK("add", a1.err, a1.done)
}

func TestUnknownAndWrongProducer(t *testing.T) {
	h := newHarness(t, Config{})
	if r := h.add("nope", 1, 0, tp("a", 0)); r.err != kerr.InvalidProducerIDMapping {
		t.Fatalf("unknown id: %v", r.err)
	}
	ir := h.init("t1", 60000)
	if r := h.add("t1", ir.pid+1, ir.epoch, tp("a", 0)); r.err != kerr.InvalidProducerIDMapping {
		t.Fatalf("wrong pid: %v", r.err)
	}
	if r := h.end("t1", ir.pid, ir.epoch, true); r.err != kerr.InvalidTxnState {
		t.Fatalf("end with no transaction: %v", r.err)
	}
	if r := h.initWith("t1", 60000, ir.pid, ir.epoch+3); r.err != kerr.ProducerFenced {
		t.Fatalf("init with a wrong epoch: %v", r.err)
	}
	if r := h.initWith("t1", 60000, ir.pid, ir.epoch); r.err != nil || r.epoch != ir.epoch+1 {
		t.Fatalf("KIP-360 bump: %+v", r)
	}
}

func TestEpochExhaustionAllocatesNewID(t *testing.T) {
	h := newHarness(t, Config{})
	ir := h.init("t1", 60000)
	m := h.c.txns["t1"]
	m.epoch = math.MaxInt16 - 1
	r := h.init("t1", 60000)
	h.mustOK("init", r.err, r.done)
	if r.pid == ir.pid || r.epoch != 0 {
		t.Fatalf("init at the last epoch: %+v, want a new pid at 0", r)
	}
}

func TestVerify(t *testing.T) {
	h := newHarness(t, Config{})
	pid, epoch := h.begin("t1", tp("a", 0))
	errs, err := h.c.Verify("t1", pid, epoch, []TopicPartition{tp("a", 0), tp("a", 1)})
	if err != nil || errs[0] != nil || errs[1] != kerr.InvalidTxnState {
		t.Fatalf("verify: %v %v", errs, err)
	}
	if _, err := h.c.Verify("t1", pid, epoch-1, nil); err != kerr.ProducerFenced {
		t.Fatalf("verify old epoch: %v", err)
	}
}

func TestReplayRejectsBadRecordsKeepingState(t *testing.T) {
	h := newHarness(t, Config{})
	h.begin("t1", tp("a", 0))
	before, _ := h.c.Describe("t1")
	for _, rec := range []Record{
		{Key: []byte{0}, Value: nil},
		{Key: metaKey("t1"), Value: []byte{0, 0, 1}},
		{Key: []byte{0, 9, 0, 2, 't', '1'}, Value: []byte{}},
	} {
		if err := h.c.Replay(rec.Key, rec.Value); err == nil {
			t.Fatalf("replay of %x/%x: no error", rec.Key, rec.Value)
		}
	}
	after, _ := h.c.Describe("t1")
	if after.State != before.State || after.ProducerEpoch != before.ProducerEpoch || len(after.Partitions) != 1 {
		t.Fatalf("state changed: %+v -> %+v", before, after)
	}
}

func TestListFilters(t *testing.T) {
	h := newHarness(t, Config{})
	h.begin("b", tp("x", 0))
	ir := h.init("a", 60000)
	h.mustOK("init", ir.err, ir.done)
	all := h.c.List(nil, nil)
	if len(all) != 2 || all[0].TransactionalID != "a" {
		t.Fatalf("list %+v", all)
	}
	on := h.c.List([]State{Ongoing}, nil)
	if len(on) != 1 || on[0].TransactionalID != "b" {
		t.Fatalf("ongoing %+v", on)
	}
	if byPID := h.c.List(nil, []int64{ir.pid}); len(byPID) != 1 || byPID[0].TransactionalID != "a" {
		t.Fatalf("by pid %+v", byPID)
	}
}
