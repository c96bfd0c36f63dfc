package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/records"
)

// Transactions across a three-broker cluster: the coordinator and the
// partitions' leaders are different brokers, so markers travel by node
// RPC; a committed transaction becomes visible to read_committed on every
// partition, an aborted one is listed as aborted, and one whose
// coordinator crashes mid-transaction is aborted by the new coordinator
// when it times out.

// findTxnCoordinator asks broker ask for the coordinator of a
// transactional id (key type 1) until one is named.
func findTxnCoordinator(t *testing.T, c *cluster, ask int32, id string) int32 {
	t.Helper()
	var found int32
	ok := c.runUntil(60*time.Second, func() bool {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorType, req.CoordinatorKeys = 4, 1, []string{id}
		co := c.request(ask, req).(*kmsg.FindCoordinatorResponse).Coordinators[0]
		if co.ErrorCode != 0 || c.nodes[co.NodeID] == nil || c.nodes[co.NodeID].r == nil {
			c.runFor(50 * time.Millisecond)
			return false
		}
		found = co.NodeID
		return true
	})
	if !ok {
		t.Fatalf("no transaction coordinator for %s", id)
	}
	return found
}

// txnCall sends a request to the coordinator of id, retrying on the
// errors a client retries (asking ask where the coordinator went).
func txnCall(t *testing.T, c *cluster, ask int32, id string, mk func() kmsg.Request, code func(kmsg.Response) int16) kmsg.Response {
	t.Helper()
	var resp kmsg.Response
	co := findTxnCoordinator(t, c, ask, id)
	ok := c.runUntil(60*time.Second, func() bool {
		resp = c.request(co, mk())
		switch code(resp) {
		case kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.ConcurrentTransactions.Code:
			c.runFor(50 * time.Millisecond)
			return false
		case kerr.NotCoordinator.Code:
			co = findTxnCoordinator(t, c, ask, id)
			return false
		}
		return true
	})
	if !ok {
		t.Fatalf("%s: only retriable errors", kmsg.NameForKey(mk().Key()))
	}
	return resp
}

// txnInit initializes a transactional producer (InitProducerId v4 with
// the pid and epoch it holds, -1 for none) and returns its new ones.
func txnInit(t *testing.T, c *cluster, id string, timeoutMs int32, pid int64, epoch int16) (int64, int16) {
	t.Helper()
	ir := txnCall(t, c, 1, id, func() kmsg.Request {
		r := kmsg.NewPtrInitProducerIDRequest()
		r.Version, r.TransactionalID, r.TransactionTimeoutMillis, r.ProducerID, r.ProducerEpoch = 4, kmsg.StringPtr(id), timeoutMs, pid, epoch
		return r
	}, func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }).(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 {
		t.Fatalf("init: %v", kerr.ErrorForCode(ir.ErrorCode))
	}
	return ir.ProducerID, ir.ProducerEpoch
}

// txnAdd adds partitions of topic to the producer's transaction.
func txnAdd(t *testing.T, c *cluster, id string, pid int64, epoch int16, topic string, parts ...int32) {
	t.Helper()
	addCode := func(r kmsg.Response) int16 {
		return r.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := addCode(txnCall(t, c, 1, id, func() kmsg.Request { return addPartitionsReq(id, pid, epoch, topic, parts...) }, addCode)); code != 0 {
		t.Fatalf("add %s %v: %v", topic, parts, kerr.ErrorForCode(code))
	}
}

// txnEnd sends EndTxn (asking broker ask for the coordinator) and returns
// its error code.
func txnEnd(t *testing.T, c *cluster, ask int32, id string, pid int64, epoch int16, commit bool) int16 {
	t.Helper()
	endCode := func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode }
	return endCode(txnCall(t, c, ask, id, func() kmsg.Request { return endTxnReq(id, pid, epoch, commit) }, endCode))
}

func txnBatchOf(pid int64, epoch int16, seq int32, vals ...string) []byte {
	var recs []records.Record
	for _, v := range vals {
		recs = append(recs, records.Record{Value: []byte(v)})
	}
	return records.Build(records.BuildOptions{Transactional: true, Producer: &records.Producer{ID: pid, Epoch: epoch, BaseSequence: seq}}, recs)
}

// readCommitted fetches a partition read_committed from 0 and returns the
// answer's partition.
func readCommitted(t *testing.T, c *cluster, topic string, p int32) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxBytes, req.IsolationLevel = 11, 1<<20, 1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.request(leaderOf(c, topic, p), req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
}

func TestTxnAcrossBrokers(t *testing.T) {
	c := newCluster(t, 3, 16)
	c.waitReady()
	createTopic(t, c, 1, "d", 3, 3, nil)
	waitLeaders(t, c, "d", 3)
	const id = "tx"
	seq := map[int32]int32{}
	// run opens a transaction on every partition and writes one value to
	// each.
	run := func(pid int64, epoch int16, name string) {
		txnAdd(t, c, id, pid, epoch, "d", 0, 1, 2)
		for p := int32(0); p < 3; p++ {
			req := produceReq("d", p, -1, txnBatchOf(pid, epoch, seq[p], fmt.Sprintf("%s-%d", name, p)))
			req.TransactionID = kmsg.StringPtr(id)
			sp := c.request(leaderOf(c, "d", p), req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if sp.ErrorCode != 0 {
				t.Fatalf("produce %s to d-%d: %v", name, p, kerr.ErrorForCode(sp.ErrorCode))
			}
			seq[p]++
		}
	}
	stable := func() bool {
		for p := int32(0); p < 3; p++ {
			if sp := readCommitted(t, c, "d", p); sp.ErrorCode != 0 || sp.LastStableOffset != sp.HighWatermark {
				return false
			}
		}
		return true
	}

	pid, epoch := txnInit(t, c, id, 2000, -1, -1)
	remote := 0
	for p := int32(0); p < 3; p++ {
		if leaderOf(c, "d", p) != findTxnCoordinator(t, c, 1, id) {
			remote++
		}
	}
	if remote == 0 {
		t.Fatal("the coordinator leads every partition: the marker RPC would not be exercised")
	}
	run(pid, epoch, "a")
	for p := int32(0); p < 3; p++ {
		if sp := readCommitted(t, c, "d", p); sp.LastStableOffset != 0 || len(sp.RecordBatches) != 0 {
			t.Fatalf("open transaction: d-%d lso %d, %d bytes read_committed", p, sp.LastStableOffset, len(sp.RecordBatches))
		}
	}
	if code := txnEnd(t, c, 1, id, pid, epoch, true); code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	if !c.runUntil(10*time.Second, stable) {
		t.Fatal("committed transaction: the last stable offsets did not reach the high watermarks")
	}
	for p := int32(0); p < 3; p++ {
		if sp := readCommitted(t, c, "d", p); len(sp.RecordBatches) == 0 || len(sp.AbortedTransactions) != 0 {
			t.Fatalf("committed d-%d: %d bytes, aborted %v", p, len(sp.RecordBatches), sp.AbortedTransactions)
		}
	}

	run(pid, epoch, "b")
	if code := txnEnd(t, c, 1, id, pid, epoch, false); code != 0 {
		t.Fatalf("abort: %v", kerr.ErrorForCode(code))
	}
	if !c.runUntil(10*time.Second, stable) {
		t.Fatal("aborted transaction: the last stable offsets did not reach the high watermarks")
	}
	for p := int32(0); p < 3; p++ {
		sp := readCommitted(t, c, "d", p)
		if len(sp.AbortedTransactions) != 1 || sp.AbortedTransactions[0].ProducerID != pid {
			t.Fatalf("aborted d-%d: aborted list %+v", p, sp.AbortedTransactions)
		}
	}

	// A third transaction whose coordinator crashes: the new coordinator
	// aborts it at its timeout and fences the old epoch.
	run(pid, epoch, "c")
	co := findTxnCoordinator(t, c, 1, id)
	c.nodes[co].crash()
	ask := int32(1)
	if co == 1 {
		ask = 2
	}
	if !c.runUntil(30*time.Second, stable) {
		t.Fatal("after the coordinator crashed: the open transaction was never aborted")
	}
	if code := txnEnd(t, c, ask, id, pid, epoch, true); code != kerr.ProducerFenced.Code {
		t.Fatalf("commit after the timeout abort: %v, want PRODUCER_FENCED", kerr.ErrorForCode(code))
	}
}
