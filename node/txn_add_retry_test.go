package node

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
)

// txnV2Rig is a 3-broker cluster with topic z (3 partitions, 3 replicas)
// and a transactional producer of transaction version 2.
type txnV2Rig struct {
	t          *testing.T
	c          *cluster
	id         string
	pid        int64
	epoch      int16
	co, p, q   int32 // the coordinator; two partitions of z led by other brokers
	produceVer int16
}

func newTxnV2Rig(t *testing.T, seed int64) *txnV2Rig {
	c := newCluster(t, 3, seed)
	c.waitReady()
	createTopic(t, c, 1, "z", 3, 3, nil)
	waitLeaders(t, c, "z", 3)
	g := &txnV2Rig{t: t, c: c, id: "zx", produceVer: 12}
	g.pid, g.epoch = txnInit(t, c, g.id, 60000, -1, -1)
	g.co, g.p, g.q = awayFromTxnCoordinator(t, c, g.id, "z")
	return g
}

func (g *txnV2Rig) produceReq(p int32, epoch int16, seq int32) *kmsg.ProduceRequest {
	req := produceReq("z", p, -1, txnBatchOf(g.pid, epoch, seq, "x"))
	req.Version, req.TransactionID = g.produceVer, kmsg.StringPtr(g.id)
	return req
}

// produce sends a batch and runs until it is answered.
func (g *txnV2Rig) produce(p int32, epoch int16, seq int32) int16 {
	return g.c.request(leaderOf(g.c, "z", p), g.produceReq(p, epoch, seq)).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// endV5 ends the transaction at epoch (EndTxn v5) and returns the next
// epoch; the clock stops when the answer comes, before the markers land.
func (g *txnV2Rig) endV5(epoch int16, commit bool) int16 {
	g.t.Helper()
	endCode := func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode }
	er := txnCall(g.t, g.c, 1, g.id, func() kmsg.Request {
		req := endTxnReq(g.id, g.pid, epoch, commit)
		req.Version = 5
		return req
	}, endCode).(*kmsg.EndTxnResponse)
	if er.ErrorCode != 0 || er.ProducerEpoch != epoch+1 {
		g.t.Fatalf("EndTxn v5 at epoch %d: %v, epoch %d", epoch, kerr.ErrorForCode(er.ErrorCode), er.ProducerEpoch)
	}
	return er.ProducerEpoch
}

// startFirst sends a transaction's first batch to partition p without
// running the clock and returns its answer (so far) and the verification
// call its leader has out (nil when answered at once).
func (g *txnV2Rig) startFirst(p int32, epoch int16) (*bool, *int16, *verifyCall) {
	lead := g.c.nodes[leaderOf(g.c, "z", p)].r
	answered, code := new(bool), new(int16)
	lead.HandleRequest(Client{ClientID: "test"}, g.produceReq(p, epoch, 0), func(r kmsg.Response) {
		*answered, *code = true, r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	})
	var call *verifyCall
	for _, cl := range lead.txns.verify.byKey { //floe:unordered at most one entry here
		call = cl
	}
	return answered, code, call
}

// TestTxnV2ProduceRightAfterEndTxn (KIP-890 part 2): the first batch of the
// next transaction, sent as soon as EndTxn v5 is answered, reaches the
// coordinator while the previous transaction's markers are still being
// written, and is told CONCURRENT_TRANSACTIONS. The partition leader asks
// again (txn_verify.go, retryAdd) rather than failing the produce at once,
// and the batch is appended once the markers are done. Before the retry
// the produce got NOT_ENOUGH_REPLICAS at the first answer.
func TestTxnV2ProduceRightAfterEndTxn(t *testing.T) {
	g := newTxnV2Rig(t, 23)
	if code := g.produce(g.p, g.epoch, 0); code != 0 {
		t.Fatalf("produce v12: %v", kerr.ErrorForCode(code))
	}
	next := g.endV5(g.epoch, true)
	answered, code, call := g.startFirst(g.p, next)
	if *answered || call == nil || !call.add {
		t.Fatalf("the next transaction's first batch was not sent to its coordinator (answered %v, %v)", *answered, kerr.ErrorForCode(*code))
	}
	if !g.c.runUntil(10*time.Second, func() bool { return *answered }) {
		t.Fatal("the first batch of the next transaction was never answered")
	}
	if *code != 0 {
		t.Fatalf("first batch right after EndTxn: %v after %d asks, want accepted", kerr.ErrorForCode(*code), call.asks)
	}
	if call.asks < 2 {
		t.Fatalf("the coordinator was asked %d times: the markers were done before the add, so the retry was not exercised", call.asks)
	}
	g.endV5(next, true)
	if !g.c.runUntil(10*time.Second, func() bool { return txnStable(t, g.c, "z", g.p) }) {
		t.Fatal("the second transaction did not close")
	}
}

// TestTxnV2ConcurrentRetriesBounded: while the previous transaction's
// markers cannot be written (the coordinator's link to the broker leading
// one of its partitions is cut), the next transaction's add is told
// CONCURRENT_TRANSACTIONS again and again. The partition leader retries a
// bounded number of times (txnAddRetryMax / txnAddRetryBackoff, on the
// reactor's clock) and then answers NOT_ENOUGH_REPLICAS, which the client
// retries; once the link heals the client's retry is appended.
func TestTxnV2ConcurrentRetriesBounded(t *testing.T) {
	g := newTxnV2Rig(t, 23)
	blocked := leaderOf(g.c, "z", g.q)
	r := int32(-1) // a partition led by neither the blocked broker nor, ideally, the coordinator
	for i := int32(0); i < 3; i++ {
		if l := leaderOf(g.c, "z", i); l != blocked && (r < 0 || l != g.co) {
			r = i
		}
	}
	if r < 0 {
		t.Fatalf("broker %d leads every partition of z", blocked)
	}
	if code := g.produce(g.q, g.epoch, 0); code != 0 {
		t.Fatalf("produce v12 to z-%d: %v", g.q, kerr.ErrorForCode(code))
	}
	g.c.w.Cut(netx.NodeID(g.co), netx.NodeID(blocked))
	next := g.endV5(g.epoch, true)
	answered, code, call := g.startFirst(r, next)
	if call == nil || !call.add {
		t.Fatalf("the first batch to z-%d was not sent to its coordinator (answered %v, %v)", r, *answered, kerr.ErrorForCode(*code))
	}
	if !g.c.runUntil(10*time.Second, func() bool { return *answered }) {
		t.Fatal("the first batch was never answered")
	}
	maxAsks := 1 + int(txnAddRetryMax/txnAddRetryBackoff)
	if *code != kerr.NotEnoughReplicas.Code || call.asks < 2 || call.asks > maxAsks {
		t.Fatalf("add while the markers cannot land: %v after %d asks; want NOT_ENOUGH_REPLICAS after 2 to %d",
			kerr.ErrorForCode(*code), call.asks, maxAsks)
	}
	lead := g.c.nodes[leaderOf(g.c, "z", r)].r
	if n := len(lead.txns.verify.calls); n != 0 {
		t.Fatalf("%d verification calls still out after the answer", n)
	}
	g.c.w.Heal()
	last := kerr.NotEnoughReplicas.Code
	ok := g.c.runUntil(30*time.Second, func() bool {
		if last = g.produce(r, next, 0); last == kerr.NotEnoughReplicas.Code {
			g.c.runFor(50 * time.Millisecond)
		}
		return last != kerr.NotEnoughReplicas.Code
	})
	if !ok || last != 0 {
		t.Fatalf("the client's retry after the link healed: %v, want accepted", kerr.ErrorForCode(last))
	}
	if c := g.produce(r, next, 1); c != 0 {
		t.Fatalf("the transaction's next batch: %v", kerr.ErrorForCode(c))
	}
}
