package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeTxnLog commits transactional writes at once, keeping them (with
// their producer) for replay, or fails them with failWith.
type fakeTxnLog struct {
	now      *time.Duration
	failWith error
	batches  []txnBatch
}

type txnBatch struct {
	pid  int64
	recs []Record
}

func (l *fakeTxnLog) WriteTxn(pid int64, epoch int16, recs []Record, done func(time.Duration, error)) {
	if l.failWith != nil {
		done(*l.now, l.failWith)
		return
	}
	l.batches = append(l.batches, txnBatch{pid, recs})
	done(*l.now, nil)
}

func txnCommit(c *Coordinator, now time.Duration, group string, pid int64, offset int64) *kmsg.TxnOffsetCommitResponse {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = 3, group, pid, 0, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	var out *kmsg.TxnOffsetCommitResponse
	c.TxnOffsetCommit(now, req, func(r *kmsg.TxnOffsetCommitResponse) { out = r })
	return out
}

func fetchT0(c *Coordinator, group string) (int64, int16) {
	f := c.FetchOffsets(group, []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}, true)
	p := f.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

func TestTxnOffsetsVisibleOnlyOnCommit(t *testing.T) {
	h := newHarness(t, Config{})
	tl := &fakeTxnLog{now: &h.now}
	h.c.env.TxnLog = tl
	if r := txnCommit(h.c, h.now, "g", 7, 10); r == nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("txn commit: %+v", r)
	}
	if off, code := fetchT0(h.c, "g"); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("pending offset fetched: %d code %d", off, code)
	}
	h.c.CompleteTxn(7, false)
	if off, code := fetchT0(h.c, "g"); code != 0 || off != -1 {
		t.Fatalf("aborted offset: %d code %d, want -1", off, code)
	}
	txnCommit(h.c, h.now, "g", 7, 20)
	h.c.CompleteTxn(7, true)
	h.c.CompleteTxn(7, true) // a retried marker changes nothing
	if off, code := fetchT0(h.c, "g"); code != 0 || off != 20 {
		t.Fatalf("committed offset: %d code %d, want 20", off, code)
	}
	// Replay: a committed transaction applies, an open one stays pending.
	txnCommit(h.c, h.now, "g", 8, 30)
	c := New(Config{}, Env{})
	for i, b := range tl.batches {
		for _, rec := range b.recs {
			if err := c.ReplayTxn(b.pid, rec.Key, rec.Value); err != nil {
				t.Fatal(err)
			}
		}
		if i == 0 {
			c.ReplayMarker(b.pid, false)
		}
		if i == 1 {
			c.ReplayMarker(b.pid, true)
		}
	}
	if off, code := fetchT0(c, "g"); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("replayed open transaction: %d code %d", off, code)
	}
	c.CompleteTxn(8, true)
	if off, _ := fetchT0(c, "g"); off != 30 {
		t.Fatalf("replayed then committed: %d, want 30", off)
	}
}

func TestTxnOffsetCommitFenced(t *testing.T) {
	h := newHarness(t, Config{})
	h.c.env.TxnLog = &fakeTxnLog{now: &h.now, failWith: kerr.InvalidProducerEpoch}
	if r := txnCommit(h.c, h.now, "g", 7, 10); r.Topics[0].Partitions[0].ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("fenced: %+v", r.Topics[0].Partitions[0])
	}
	if h.c.PendingTxnOffsets() != 0 {
		t.Fatal("a refused write left pending offsets")
	}
}
