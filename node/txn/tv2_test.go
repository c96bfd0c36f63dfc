package txn

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// endV2 sends EndTxn v5 (transaction version 2) and returns its answer
// as an initResult (the producer id and epoch to use next).
func (h *harness) endV2(id string, pid int64, epoch int16, commit bool) *initResult {
	r := &initResult{}
	h.c.EndTxnV2(id, pid, epoch, commit, h.now, func(pid int64, epoch int16, err *kerr.Error) {
		*r = initResult{pid, epoch, err, true}
	})
	return r
}

// KIP-890 part 2: every end bumps the epoch, written with the decision,
// and the markers carry the new one; whatever the client still had in
// flight at the old epoch is fenced: an add (a late produce's implicit
// add), a late EndTxn. Retries of a completed end succeed.
func TestEndTxnV2BumpsEpoch(t *testing.T) {
	h := newHarness(t, Config{})
	pid, epoch := h.begin("t1", tp("a", 0))
	er := h.endV2("t1", pid, epoch, true)
	h.mustOK("end", er.err, er.done)
	if er.pid != pid || er.epoch != epoch+1 {
		t.Fatalf("end answered %d/%d, want %d/%d", er.pid, er.epoch, pid, epoch+1)
	}
	h.markers.ackAll()
	if h.state("t1") != CompleteCommit {
		t.Fatalf("state %v, want CompleteCommit", h.state("t1"))
	}
	if m := h.markers.sent[0]; !m.Commit || m.ProducerEpoch != epoch+1 {
		t.Fatalf("marker %+v, want a commit at epoch %d", m.Marker, epoch+1)
	}
	if v, _ := h.log.last("t1"); v.ProducerEpoch != epoch+1 {
		t.Fatalf("record at epoch %d, want %d", v.ProducerEpoch, epoch+1)
	}
	// The retry of the commit (the client lost the answer) succeeds with
	// the new epoch; an abort at the old epoch is fenced.
	if r := h.endV2("t1", pid, epoch, true); r.err != nil || r.epoch != epoch+1 {
		t.Fatalf("retried commit: %v epoch %d", r.err, r.epoch)
	}
	if r := h.endV2("t1", pid, epoch, false); r.err != kerr.ProducerFenced {
		t.Fatalf("abort at the old epoch after a commit: %v, want PRODUCER_FENCED", r.err)
	}
	// A late produce of the old transaction adds its partition at the old
	// epoch: fenced, instead of opening a transaction at the old epoch.
	if r := h.add("t1", pid, epoch, tp("b", 0)); r.err != kerr.ProducerFenced {
		t.Fatalf("add at the old epoch: %v, want PRODUCER_FENCED", r.err)
	}
	// The next transaction at the new epoch; a late EndTxn of the old one
	// does not end it.
	h.mustOK("add", h.add("t1", pid, epoch+1, tp("b", 0)).err, true)
	if r := h.endV2("t1", pid, epoch, true); r.err != kerr.ProducerFenced {
		t.Fatalf("late commit at the old epoch during the next transaction: %v, want PRODUCER_FENCED", r.err)
	}
	if h.state("t1") != Ongoing {
		t.Fatalf("state %v, want Ongoing", h.state("t1"))
	}
	ar := h.endV2("t1", pid, epoch+1, false)
	h.mustOK("abort", ar.err, ar.done)
	h.markers.ackAll()
	if ar.epoch != epoch+2 || h.markers.sent[1].Commit || h.markers.sent[1].ProducerEpoch != epoch+2 {
		t.Fatalf("abort answered epoch %d, marker %+v; want epoch %d", ar.epoch, h.markers.sent[1].Marker, epoch+2)
	}
	// An abort with nothing open (Kafka's empty abort) bumps too; a commit
	// with nothing open is refused.
	if r := h.endV2("t1", pid, epoch+2, true); r.err != kerr.InvalidTxnState {
		t.Fatalf("empty commit: %v, want INVALID_TXN_STATE", r.err)
	}
	if r := h.endV2("t1", pid, epoch+2, false); r.err != nil || r.epoch != epoch+3 {
		t.Fatalf("empty abort: %v epoch %d, want epoch %d", r.err, r.epoch, epoch+3)
	}
	if h.state("t1") != Empty {
		t.Fatalf("state %v after the empty abort, want Empty", h.state("t1"))
	}
}

// A new coordinator loads the bumped epoch from the log: the retry of a
// completed end still succeeds there, and the old epoch stays fenced.
func TestEndTxnV2AcrossFailover(t *testing.T) {
	h := newHarness(t, Config{})
	pid, epoch := h.begin("t1", tp("a", 0))
	h.mustOK("end", h.endV2("t1", pid, epoch, false).err, true)
	h.markers.ackAll()
	h.failover()
	if r := h.endV2("t1", pid, epoch, false); r.err != nil || r.epoch != epoch+1 {
		t.Fatalf("retried abort after failover: %v epoch %d", r.err, r.epoch)
	}
	if r := h.add("t1", pid, epoch, tp("a", 0)); r.err != kerr.ProducerFenced {
		t.Fatalf("add at the old epoch after failover: %v, want PRODUCER_FENCED", r.err)
	}
}
