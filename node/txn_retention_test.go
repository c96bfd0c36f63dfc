package node

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Retention never deletes data at or above the last stable offset: a
// transaction open at the start of the log holds retention back until it
// is decided; then retention goes on.
func TestRetentionKeepsOpenTransaction(t *testing.T) {
	c := newCluster(t, 1, 31)
	c.waitReady()
	r := c.nodes[1].r
	createTopic(t, c, 1, "rt", 1, 1, map[string]string{"segment.bytes": "1024", "retention.ms": "-1"})
	waitLeaders(t, c, "rt", 1)
	const id = "rtx"
	ir := txnCall(t, c, 1, id, func() kmsg.Request {
		q := kmsg.NewPtrInitProducerIDRequest()
		q.Version, q.TransactionalID, q.TransactionTimeoutMillis, q.ProducerID, q.ProducerEpoch = 4, kmsg.StringPtr(id), 600000, -1, -1
		return q
	}, func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }).(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 {
		t.Fatalf("init: %v", kerr.ErrorForCode(ir.ErrorCode))
	}
	pid, epoch := ir.ProducerID, ir.ProducerEpoch
	addCode := func(r kmsg.Response) int16 {
		return r.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := addCode(txnCall(t, c, 1, id, func() kmsg.Request { return addPartitionsReq(id, pid, epoch, "rt", 0) }, addCode)); code != 0 {
		t.Fatalf("add partitions: %v", kerr.ErrorForCode(code))
	}
	req := produceReq("rt", 0, -1, txnBatchOf(pid, epoch, 0, "open"))
	req.TransactionID = kmsg.StringPtr(id)
	if sp := c.request(1, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; sp.ErrorCode != 0 {
		t.Fatalf("transactional produce: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	produceNow(t, c, "rt", 40) // many sealed segments after the open batch
	p := r.byName[topicPartition{"rt", 0}]
	if p.LastStableOffset() != 0 || p.Replica().Stats().Segments < 3 {
		t.Fatalf("lso %d, %d segments: want 0 and several", p.LastStableOffset(), p.Replica().Stats().Segments)
	}
	incremental(t, c, 1, kmsg.ConfigResourceTypeTopic, "rt", setOp("retention.ms", "1"))
	maintenance := time.Duration(2*maintenanceTicks) * r.cfg.TickInterval
	c.runFor(3 * maintenance)
	if p.StartOffset() != 0 {
		t.Fatalf("retention moved the start to %d past the open transaction at 0", p.StartOffset())
	}
	endCode := func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode }
	if code := endCode(txnCall(t, c, 1, id, func() kmsg.Request { return endTxnReq(id, pid, epoch, true) }, endCode)); code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	if !c.runUntil(3*maintenance, func() bool { return p.StartOffset() > 0 }) {
		t.Fatalf("the transaction committed (lso %d, hw %d) and retention still keeps everything", p.LastStableOffset(), p.HighWatermark())
	}
}
