package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// awayFromTxnCoordinator returns the coordinator of transactional id and
// two partitions of topic (3 partitions) led by other brokers, so that the
// coordinator is asked over the node RPC.
func awayFromTxnCoordinator(t *testing.T, c *cluster, id, topic string) (co, p, q int32) {
	t.Helper()
	co = findTxnCoordinator(t, c, 1, id)
	var remote []int32
	for p := int32(0); p < 3; p++ {
		if leaderOf(c, topic, p) != co {
			remote = append(remote, p)
		}
	}
	if len(remote) < 2 {
		t.Fatalf("the transaction coordinator (node %d) leads too many partitions of %s to exercise the RPC", co, topic)
	}
	return co, remote[0], remote[1]
}

// txnStable reports that nothing is open on the partition (what a hanging
// transaction would break for good).
func txnStable(t *testing.T, c *cluster, topic string, p int32) bool {
	sp := readCommitted(t, c, topic, p)
	return sp.ErrorCode == 0 && sp.LastStableOffset == sp.HighWatermark
}

// groupAwayFrom returns a group whose coordinator is not broker co.
func groupAwayFrom(t *testing.T, c *cluster, co int32) string {
	t.Helper()
	for i := 0; i < 20; i++ {
		if g := fmt.Sprintf("g%d", i); findCoordinator(t, c, 1, g) != co {
			return g
		}
	}
	t.Fatalf("every group is coordinated by the transaction's coordinator (node %d)", co)
	return ""
}

// KIP-890 part 1 across brokers (txn_verify.go): a partition leader that
// is not the transaction's coordinator appends the first transactional
// batch of a producer only once the coordinator said the partition is part
// of its ongoing transaction at that epoch. Each refusal below was accepted
// before (the check was made only with a local coordinator), and left a
// transaction open on the partition that no marker would close.
func TestTxnVerifyAcrossBrokers(t *testing.T) {
	c := newCluster(t, 3, 17)
	c.waitReady()
	createTopic(t, c, 1, "v", 3, 3, nil)
	waitLeaders(t, c, "v", 3)
	const id = "vx"
	add := func(pid int64, epoch int16, p int32) { t.Helper(); txnAdd(t, c, id, pid, epoch, "v", p) }
	end := func(pid int64, epoch int16, commit bool) {
		t.Helper()
		if code := txnEnd(t, c, 1, id, pid, epoch, commit); code != 0 {
			t.Fatalf("end (commit %v): %v", commit, kerr.ErrorForCode(code))
		}
	}
	produceTo := func(p int32, pid int64, epoch int16, seq int32) *kmsg.ProduceRequest {
		req := produceReq("v", p, -1, txnBatchOf(pid, epoch, seq, "x"))
		req.TransactionID = kmsg.StringPtr(id)
		return req
	}
	produce := func(p int32, pid int64, epoch int16, seq int32) int16 {
		resp := c.request(leaderOf(c, "v", p), produceTo(p, pid, epoch, seq))
		return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	stable := func(p int32) bool { return txnStable(t, c, "v", p) }

	pid, epoch := txnInit(t, c, id, 60000, -1, -1)
	_, p, q := awayFromTxnCoordinator(t, c, id, "v")

	// A partition never added: refused, and nothing opens there.
	if code := produce(p, pid, epoch, 0); code != kerr.InvalidTxnState.Code {
		t.Fatalf("produce to v-%d never added: %v, want INVALID_TXN_STATE", p, kerr.ErrorForCode(code))
	}
	if !stable(p) {
		t.Fatalf("v-%d: a transaction was opened by a batch the coordinator never saw added", p)
	}

	// Added: accepted; committed, it closes.
	add(pid, epoch, p)
	if code := produce(p, pid, epoch, 0); code != 0 {
		t.Fatalf("produce to added v-%d: %v", p, kerr.ErrorForCode(code))
	}
	end(pid, epoch, true)
	if !c.runUntil(10*time.Second, func() bool { return stable(p) }) {
		t.Fatalf("v-%d: the committed transaction did not close", p)
	}

	// The verification says yes, but a marker for the producer lands on
	// the partition before the answer: the transaction the coordinator
	// vouched for has ended there, so the batch is refused.
	add(pid, epoch, p)
	lead := c.nodes[leaderOf(c, "v", p)].r
	answered, code := false, int16(-1)
	lead.HandleRequest(Client{ClientID: "test"}, produceTo(p, pid, epoch, 1), func(r kmsg.Response) {
		answered, code = true, r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	})
	if answered || len(lead.txns.verify.byKey) != 1 {
		t.Fatalf("the first batch of a transaction was not sent to the coordinator for verification (answered %v)", answered)
	}
	// The coordinator's own marker: its epoch (the partition refuses an
	// older coordinator's, as from a deposed one).
	vp := lead.byName[topicPartition{"v", p}]
	coordEpoch := int32(-1)
	for _, ap := range vp.ActiveProducers() {
		if ap.ID == pid {
			coordEpoch = ap.CoordEpoch
		}
	}
	markerDone, markerErr := false, error(nil)
	lead.appendMarker(vp, pid, epoch, false, coordEpoch, func(err error) { markerDone, markerErr = true, err })
	if !c.runUntil(10*time.Second, func() bool { return answered && markerDone }) {
		t.Fatal("the produce or the marker was never answered")
	}
	if markerErr != nil {
		t.Fatalf("the marker (coordinator epoch %d): %v", coordEpoch, markerErr)
	}
	if code != kerr.InvalidTxnState.Code {
		t.Fatalf("produce verified before a marker landed: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	end(pid, epoch, false)
	if !c.runUntil(10*time.Second, func() bool { return stable(p) }) {
		t.Fatalf("v-%d: a batch verified for a transaction that had ended opened a new one", p)
	}

	// Fenced: the old epoch's first batch is refused once the producer
	// was initialized again.
	pid2, epoch2 := txnInit(t, c, id, 60000, pid, epoch)
	if code := produce(q, pid, epoch, 0); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("fenced epoch's batch to v-%d: %v, want INVALID_PRODUCER_EPOCH", q, kerr.ErrorForCode(code))
	}
	if !stable(q) {
		t.Fatalf("v-%d: the fenced epoch opened a transaction", q)
	}

	// AddPartitionsToTxn v4 at the coordinator: VerifyOnly answers per
	// partition and changes nothing; without it, it adds.
	add(pid2, epoch2, p)
	v4 := func(verify bool, parts ...int32) []kmsg.AddPartitionsToTxnResponseTransactionTopicPartition {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 4
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid2, epoch2, verify
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = "v", parts
		tx.Topics = append(tx.Topics, tt)
		req.Transactions = append(req.Transactions, tx)
		resp := c.request(findTxnCoordinator(t, c, 1, id), req).(*kmsg.AddPartitionsToTxnResponse)
		if resp.ErrorCode != 0 || len(resp.Transactions) != 1 || len(resp.Transactions[0].Topics) != 1 {
			t.Fatalf("v4: %+v", resp)
		}
		return resp.Transactions[0].Topics[0].Partitions
	}
	if ps := v4(true, p, q); ps[0].ErrorCode != 0 || ps[1].ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("v4 verify of v-%d (added) and v-%d (not): %+v", p, q, ps)
	}
	if ps := v4(false, q); ps[0].ErrorCode != 0 {
		t.Fatalf("v4 add of v-%d: %+v", q, ps)
	}
	if ps := v4(true, q); ps[0].ErrorCode != 0 {
		t.Fatalf("v4 verify of v-%d after the v4 add: %+v", q, ps)
	}
	if code := produce(q, pid2, epoch2, 0); code != 0 {
		t.Fatalf("produce to v-%d added by v4: %v", q, kerr.ErrorForCode(code))
	}
	end(pid2, epoch2, true)
	if !c.runUntil(10*time.Second, func() bool { return stable(p) && stable(q) }) {
		t.Fatal("the last transaction did not close")
	}
}

// TxnOffsetCommit is verified too: offsets sent to a transaction that never
// added the group (AddOffsetsToTxn) are refused, instead of staying pending
// on the group's __consumer_offsets partition in a transaction no marker
// closes. The group's coordinator and the transaction's are different
// brokers, so the verification goes by RPC.
func TestTxnOffsetCommitVerified(t *testing.T) {
	c := newCluster(t, 3, 19)
	c.waitReady()
	createTopic(t, c, 1, "w", 1, 3, nil)
	waitLeaders(t, c, "w", 1)
	const id = "ox"
	pid, epoch := txnInit(t, c, id, 60000, -1, -1)
	co := findTxnCoordinator(t, c, 1, id)
	name := groupAwayFrom(t, c, co)
	commitCode := func(r kmsg.Response) int16 {
		return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	commit := func(off int64) int16 {
		resp, _ := groupCall(t, c, 1, name, func() kmsg.Request { return txnCommitReq(id, pid, epoch, name, "", -1, "w", 0, off) }, commitCode)
		return commitCode(resp)
	}
	stableFetch := func() kmsg.Request {
		req := fetchReq(name, "w", 0)().(*kmsg.OffsetFetchRequest)
		req.RequireStable = true
		return req
	}
	fetched := func() kmsg.Response {
		resp, _ := groupCall(t, c, 1, name, stableFetch, fetchRespCode)
		return resp
	}

	if code := commit(5); code != kerr.InvalidTxnState.Code {
		t.Fatalf("offsets of a transaction that never added group %s: %v, want INVALID_TXN_STATE", name, kerr.ErrorForCode(code))
	}
	if resp := fetched(); fetchRespCode(resp) != 0 || fetchedOffset(resp) != -1 {
		t.Fatalf("after the refused offsets: code %v offset %d, want no offset and nothing pending",
			kerr.ErrorForCode(fetchRespCode(resp)), fetchedOffset(resp))
	}

	addCode := func(r kmsg.Response) int16 { return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode }
	if code := addCode(txnCall(t, c, 1, id, func() kmsg.Request { return addOffsetsReq(id, pid, epoch, name) }, addCode)); code != 0 {
		t.Fatalf("add offsets: %v", kerr.ErrorForCode(code))
	}
	if code := commit(7); code != 0 {
		t.Fatalf("offsets after AddOffsetsToTxn: %v", kerr.ErrorForCode(code))
	}
	if code := txnEnd(t, c, 1, id, pid, epoch, true); code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	ok := c.runUntil(10*time.Second, func() bool {
		resp := fetched()
		return fetchRespCode(resp) == 0 && fetchedOffset(resp) == 7
	})
	if !ok {
		t.Fatal("the committed transaction's offset never became the group's")
	}
}

// Transaction version 2 (KIP-890 part 2) across brokers: Produce v12 and
// TxnOffsetCommit v5 need no AddPartitionsToTxn or AddOffsetsToTxn (the
// partition's leader adds the partition, over the RPC when the coordinator
// is elsewhere); EndTxn v5 answers a bumped epoch, and a late batch of
// the ended transaction at the old epoch is refused on a partition it
// never touched (the implicit add is fenced) instead of opening a
// transaction there.
func TestTxnV2AcrossBrokers(t *testing.T) {
	c := newCluster(t, 3, 23)
	c.waitReady()
	createTopic(t, c, 1, "y", 3, 3, nil)
	waitLeaders(t, c, "y", 3)
	const id = "yx"
	pid, epoch := txnInit(t, c, id, 60000, -1, -1)
	co, p, q := awayFromTxnCoordinator(t, c, id, "y")
	produce := func(version int16, p int32, epoch int16, seq int32) int16 {
		req := produceReq("y", p, -1, txnBatchOf(pid, epoch, seq, "x"))
		req.Version, req.TransactionID = version, kmsg.StringPtr(id)
		return c.request(leaderOf(c, "y", p), req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	stable := func(p int32) bool { return txnStable(t, c, "y", p) }
	// v11 without AddPartitionsToTxn is refused (classic flow); v12 adds.
	if code := produce(11, p, epoch, 0); code != kerr.InvalidTxnState.Code {
		t.Fatalf("produce v11 to y-%d never added: %v, want INVALID_TXN_STATE", p, kerr.ErrorForCode(code))
	}
	if code := produce(12, p, epoch, 0); code != 0 {
		t.Fatalf("produce v12 to y-%d: %v", p, kerr.ErrorForCode(code))
	}
	name := groupAwayFrom(t, c, co)
	commitCode := func(r kmsg.Response) int16 {
		return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	commitOffsets := func(version int16, off int64) int16 {
		resp, _ := groupCall(t, c, 1, name, func() kmsg.Request {
			req := txnCommitReq(id, pid, epoch, name, "", -1, "y", 0, off)
			req.Version = version
			return req
		}, commitCode)
		return commitCode(resp)
	}
	if code := commitOffsets(4, 3); code != kerr.InvalidTxnState.Code {
		t.Fatalf("TxnOffsetCommit v4 without AddOffsetsToTxn: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	if code := commitOffsets(5, 3); code != 0 {
		t.Fatalf("TxnOffsetCommit v5: %v", kerr.ErrorForCode(code))
	}
	endCode := func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode }
	er := txnCall(t, c, 1, id, func() kmsg.Request {
		req := endTxnReq(id, pid, epoch, true)
		req.Version = 5
		return req
	}, endCode).(*kmsg.EndTxnResponse)
	if er.ErrorCode != 0 || er.ProducerID != pid || er.ProducerEpoch != epoch+1 {
		t.Fatalf("EndTxn v5: %v, producer %d epoch %d; want %d epoch %d", kerr.ErrorForCode(er.ErrorCode), er.ProducerID, er.ProducerEpoch, pid, epoch+1)
	}
	if !c.runUntil(10*time.Second, func() bool { return stable(p) }) {
		t.Fatalf("y-%d: the committed transaction did not close", p)
	}
	// A late batch of the ended transaction, to a partition it never
	// wrote: the implicit add at the old epoch is fenced.
	if code := produce(12, q, epoch, 0); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("late v12 batch at the old epoch to y-%d: %v, want INVALID_PRODUCER_EPOCH", q, kerr.ErrorForCode(code))
	}
	if !stable(q) {
		t.Fatalf("y-%d: the old epoch opened a transaction", q)
	}
	// The next transaction at the new epoch.
	if code := produce(12, q, epoch+1, 0); code != 0 {
		t.Fatalf("produce v12 at the new epoch to y-%d: %v", q, kerr.ErrorForCode(code))
	}
	if code := endCode(txnCall(t, c, 1, id, func() kmsg.Request {
		req := endTxnReq(id, pid, epoch+1, false)
		req.Version = 5
		return req
	}, endCode)); code != 0 {
		t.Fatalf("abort v5: %v", kerr.ErrorForCode(code))
	}
	if !c.runUntil(10*time.Second, func() bool { return stable(q) }) {
		t.Fatalf("y-%d: the aborted transaction did not close", q)
	}
	ok := c.runUntil(10*time.Second, func() bool {
		resp, _ := groupCall(t, c, 1, name, fetchReq(name, "y", 0), fetchRespCode)
		return fetchRespCode(resp) == 0 && fetchedOffset(resp) == 3
	})
	if !ok {
		t.Fatal("the committed transaction's offset (TxnOffsetCommit v5) never became the group's")
	}
}

// The marker guard under transaction version 2 (txn_verify.go). The
// transaction at epoch e ends with markers at e + 1, so a marker at the
// epoch of a Produce v12's implicit add is the previous transaction's: a
// coordinator that took over resends the markers of a decided transaction,
// and one may land on a partition while the first batch of the client's
// next transaction is being added there. It must not void the add: that
// batch was refused with INVALID_TXN_STATE, which franz-go does not retry
// and whose transaction it then commits without the batch (itest
// TestTxnPipelineKillCoordinator lost 20 of 300 committed outputs). And a
// voided call whose coordinator did not say yes keeps its own answer (here
// no answer in time: retriable), instead of INVALID_TXN_STATE. Both failed
// on the code before the fix (checked): INVALID_TXN_STATE each time.
func TestTxnV2ResentMarkerDuringAdd(t *testing.T) {
	c := newCluster(t, 3, 29)
	c.waitReady()
	createTopic(t, c, 1, "z", 3, 3, nil)
	waitLeaders(t, c, "z", 3)
	const id = "zx"
	pid, epoch := txnInit(t, c, id, 60000, -1, -1)
	_, p, _ := awayFromTxnCoordinator(t, c, id, "z")
	produceTo := func(version int16, epoch int16, seq int32) *kmsg.ProduceRequest {
		req := produceReq("z", p, -1, txnBatchOf(pid, epoch, seq, "x"))
		req.Version, req.TransactionID = version, kmsg.StringPtr(id)
		return req
	}
	endCode := func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode }
	endV5 := func(epoch int16, commit bool) int16 {
		t.Helper()
		er := txnCall(t, c, 1, id, func() kmsg.Request {
			req := endTxnReq(id, pid, epoch, commit)
			req.Version = 5
			return req
		}, endCode).(*kmsg.EndTxnResponse)
		if er.ErrorCode != 0 || er.ProducerEpoch != epoch+1 {
			t.Fatalf("EndTxn v5 at epoch %d: %v, epoch %d", epoch, kerr.ErrorForCode(er.ErrorCode), er.ProducerEpoch)
		}
		return er.ProducerEpoch
	}
	// stable: the transaction is complete at the coordinator (so an add
	// is not told CONCURRENT_TRANSACTIONS) and nothing is open on p.
	stable := func() bool {
		resp, ok := c.request(findTxnCoordinator(t, c, 1, id), describeTxnReq(id)).(*kmsg.DescribeTransactionsResponse)
		if !ok || len(resp.TransactionStates) != 1 {
			return false
		}
		st := resp.TransactionStates[0].State
		return (st == "CompleteCommit" || st == "CompleteAbort") && txnStable(t, c, "z", p)
	}
	lead := c.nodes[leaderOf(c, "z", p)].r
	part := lead.byName[topicPartition{"z", p}]
	// start sends a first batch and returns its answer so far and its
	// verification call (the coordinator is on another broker).
	start := func(req *kmsg.ProduceRequest) (*bool, *int16, *verifyCall) {
		t.Helper()
		answered, code := new(bool), new(int16)
		lead.HandleRequest(Client{ClientID: "test"}, req, func(r kmsg.Response) {
			*answered, *code = true, r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
		})
		var call *verifyCall
		for _, cl := range lead.txns.verify.byKey { //floe:unordered one entry
			call = cl
		}
		if *answered || call == nil {
			t.Fatalf("the first batch was not sent to the coordinator (answered %v)", *answered)
		}
		return answered, code, call
	}

	// Transaction 1 at epoch e, committed: markers at e + 1.
	if code := c.request(leaderOf(c, "z", p), produceTo(12, epoch, 0)).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce v12: %v", kerr.ErrorForCode(code))
	}
	next := endV5(epoch, true)
	if !c.runUntil(10*time.Second, stable) {
		t.Fatal("transaction 1 did not close")
	}

	// Transaction 2's first batch at e + 1 while transaction 1's commit
	// marker (e + 1) is written again: accepted.
	// The resent marker comes from the same coordinator, at its epoch
	// (an older coordinator's is refused as from a deposed one, and would
	// then not reach the verification at all).
	coordEpoch := int32(-1)
	for _, ap := range part.ActiveProducers() {
		if ap.ID == pid {
			coordEpoch = ap.CoordEpoch
		}
	}
	answered, code, _ := start(produceTo(12, next, 0))
	markerDone, markerErr := false, error(nil)
	lead.appendMarker(part, pid, next, true, coordEpoch, func(err error) { markerDone, markerErr = true, err })
	if !c.runUntil(10*time.Second, func() bool { return *answered && markerDone }) {
		t.Fatal("the produce or the resent marker was never answered")
	}
	if markerErr != nil {
		t.Fatalf("the resent marker (coordinator epoch %d): %v", coordEpoch, markerErr)
	}
	if *code != 0 {
		t.Fatalf("first batch of the next transaction while the previous one's marker was resent: %v, want accepted", kerr.ErrorForCode(*code))
	}
	after := endV5(next, true)
	if !c.runUntil(10*time.Second, stable) {
		t.Fatal("transaction 2 did not close")
	}
	if n := len(readCommitted(t, c, "z", p).RecordBatches); n == 0 {
		t.Fatal("read_committed: nothing")
	}

	// A voided call the coordinator never answered: retriable, not
	// INVALID_TXN_STATE (the client's retry is accepted).
	answered, code, call := start(produceTo(12, after, 0))
	lead.appendMarker(part, pid, after+1, false, coordEpoch, func(error) {})
	lead.verifyAnswered(call.id, nil)
	if !*answered || *code != kerr.NotEnoughReplicas.Code {
		t.Fatalf("voided call without an answer: answered %v, %v; want NOT_ENOUGH_REPLICAS", *answered, kerr.ErrorForCode(*code))
	}
}
