package node

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTxnMarkerWaitsForLaggingMetadata: a transaction coordinator whose
// metadata does not hold a partition of the transaction skips its marker
// (the topic was deleted: nothing to mark) only once a metadata barrier
// confirmed the partition is gone. Its metadata may just lag the topic's
// creation: a broker restarted behind the controller takes over
// __transaction_state and replays transactions another coordinator added
// the partition to. Skipping then reported the marker written, the
// coordinator wrote the transaction's Complete record, and the
// transaction stayed open on the partition for good: its last stable
// offset never reached the high watermark again (simulator seed 1200787
// --all-faults on 1a60155, simtxn-0 and simtxn-2).
func TestTxnMarkerWaitsForLaggingMetadata(t *testing.T) {
	c := newCluster(t, 1, 21)
	c.waitReady()
	createTopic(t, c, 1, "d", 1, 1, nil)
	waitLeaders(t, c, "d", 1)
	const id = "tx"
	// A long transaction timeout: the coordinator's own abort must not
	// close the transaction while the test looks.
	pid, epoch := txnInit(t, c, id, 600_000, -1, -1)
	txnAdd(t, c, id, pid, epoch, "d", 0)
	req := produceReq("d", 0, -1, txnBatchOf(pid, epoch, 0, "a"))
	req.TransactionID = kmsg.StringPtr(id)
	if sp := c.request(1, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; sp.ErrorCode != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	r := c.nodes[1].r
	p := r.byName[topicPartition{"d", 0}]
	if p == nil || p.OpenTxns() != 1 {
		t.Fatalf("d-0: no open transaction to mark")
	}

	// The coordinator's metadata as just restarted behind the topic's
	// creation: d is not in it yet. It catches up (here: at once, before
	// the reactor runs again), and only a marker written after that can
	// close the transaction.
	topic := r.ctl.state.Topics["d"]
	delete(r.ctl.state.Topics, "d")
	var (
		called bool
		err    error
		open   int
	)
	r.writeMarker("d", 0, pid, epoch, false, 0, func(e error) {
		called, err, open = true, e, p.OpenTxns()
	})
	r.ctl.state.Topics["d"] = topic
	if called && err == nil && open != 0 {
		t.Fatalf("the marker for d-0 was reported written on metadata that lagged the topic's creation, and d-0 still has %d transaction(s) open", open)
	}
	if !c.runUntil(10*time.Second, func() bool { return called }) {
		t.Fatal("the marker's write never finished")
	}
	if err != nil {
		t.Fatalf("marker: %v", err)
	}
	if open != 0 {
		t.Fatalf("the marker for d-0 was reported written with %d transaction(s) still open there", open)
	}
	if !txnStable(t, c, "d", 0) {
		t.Fatal("d-0: the last stable offset is below the high watermark after the abort marker")
	}
}
