package itest

// Exactly-once across kill -9 (issue 16): franz-go's GroupTransactSession
// consume-transform-produce pipeline on a 3-broker cluster while the
// leader of the transaction's __transaction_state partition (its
// coordinator) is killed with SIGKILL and restarted, twice, mid-stream,
// and between the two the leader of an output partition.
// Every transaction either completes or aborts (the session rewinds and
// does the work again); read read_committed, the output must hold each
// input's result exactly once, in input order per key. About 25 s;
// skipped with -short. Floe finalizes transaction.version 2, so the
// session runs KIP-890 part 2 (Produce v12's implicit adds, EndTxn v5's
// epoch bump): the test that found the marker guard voiding the next
// transaction's add (node TestTxnV2ResentMarkerDuringAdd).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestTxnPipelineKillCoordinator(t *testing.T) {
	if testing.Short() {
		t.Skip("kills the transaction coordinator twice and an output leader once under a pipeline (about 30 s)")
	}
	bs := startCluster(t, 3)
	createReplicated(t, bs, "eos-in", 3, 3)
	createReplicated(t, bs, "eos-out", 3, 3)
	in := kgoClient(t, bs[0].KafkaAddr, kgo.SeedBrokers(seeds(bs)...))
	var recs []*kgo.Record
	for i := range txnInputs {
		recs = append(recs, &kgo.Record{Topic: "eos-in", Key: fmt.Appendf(nil, "k%d", i%txnKeys), Value: []byte(strconv.Itoa(i))})
	}
	if err := in.ProduceSync(ctxFor(t, opWaitMax), recs...).FirstErr(); err != nil {
		t.Fatalf("produce inputs: %v", err)
	}

	const txnID = "eos-kill"
	var done atomic.Int64
	var wg sync.WaitGroup
	ctx := ctxFor(t, 4*time.Minute)
	wg.Add(1)
	go func() {
		defer wg.Done()
		transformThroughFaults(t, ctx, seeds(bs), txnID, &done)
	}()

	// The coordinator, then the leader of an output partition that is
	// not the coordinator (a data partition's leader, whose markers and
	// last stable offset must survive it), then the coordinator again.
	adm := kadm.NewClient(in)
	for kill, what := range []string{"coordinator", "output leader", "coordinator"} {
		want := int64((kill + 1) * txnInputs / 6)
		waitFor(t, 2*time.Minute, fmt.Sprintf("%d inputs committed before kill %d", want, kill+1), func() bool { return done.Load() >= want })
		co := txnCoordinator(t, bs, txnID)
		id := co
		if what == "output leader" {
			for p := int32(0); p < 3 && id == co; p++ {
				id = leaderOf(t, adm, "eos-out", p)
			}
			if id == co {
				t.Logf("kill %d: broker %d leads every eos-out partition; killing it as the coordinator", kill+1, co)
			}
		}
		victim := bs[id-1]
		victim.Kill()
		t.Logf("kill %d: broker %d (%s; coordinator of %s: %d) killed at %d committed inputs", kill+1, id, what, txnID, co, done.Load())
		time.Sleep(2 * time.Second)
		victim.Restart()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	committed := consumeAll(t, bs[0].KafkaAddr, "eos-out", kgo.ReadCommitted(), txnInputs)
	checkExactlyOnce(t, committed)
	t.Logf("read_committed: %d records, each input exactly once", len(committed))
}

// txnCoordinator asks the cluster which broker coordinates id.
func txnCoordinator(t *testing.T, bs []*Broker, id string) int32 {
	t.Helper()
	cl := kgoClient(t, bs[0].KafkaAddr, kgo.SeedBrokers(seeds(bs)...))
	var node int32
	waitFor(t, 30*time.Second, "the transaction coordinator of "+id, func() bool {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKeys = 1, []string{id}
		resp, err := req.RequestWith(ctxFor(t, 5*time.Second), cl)
		if err != nil || len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
			return false
		}
		node = resp.Coordinators[0].NodeID
		return node >= 1 && int(node) <= len(bs)
	})
	return node
}

// transformThroughFaults copies eos-in to eos-out in transactions until
// the committed offsets cover every input. Errors from brokers going away
// are expected: a failed transaction is aborted (End reports it not
// committed) and its records are polled again.
func transformThroughFaults(t *testing.T, ctx context.Context, seeds []string, txnID string, done *atomic.Int64) {
	s, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(seeds...), kgo.MetadataMinAge(50*time.Millisecond),
		kgo.TransactionalID(txnID), kgo.TransactionTimeout(10*time.Second),
		kgo.ConsumerGroup("eos-kill-g"), kgo.ConsumeTopics("eos-in"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DefaultProduceTopic("eos-out"),
	)
	if err != nil {
		t.Error(err)
		return
	}
	defer s.Close()
	failures := 0
	for done.Load() < txnInputs {
		if ctx.Err() != nil {
			t.Errorf("transform: %d of %d inputs committed before the deadline (%d failed transactions)", done.Load(), txnInputs, failures)
			return
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := s.PollRecords(pctx, 5) // 60 transactions: several per kill
		cancel()
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		if err := s.Begin(); err != nil {
			t.Errorf("begin: %v", err)
			return
		}
		var outs []*kgo.Record
		for _, r := range recs {
			outs = append(outs, &kgo.Record{Key: r.Key, Value: fmt.Appendf(nil, "%s/%d:%s", r.Topic, r.Partition, r.Value)})
		}
		pctx, cancel = context.WithTimeout(ctx, 20*time.Second)
		try := kgo.TryCommit
		if err := s.ProduceSync(pctx, outs...).FirstErr(); err != nil {
			// franz-go would commit what succeeded (it does not stop
			// a commit after a failed produce, as the Java client
			// does), which loses the failed records from a committed
			// transaction: abort, as its examples do. A write of the
			// session's own transaction has no reason to get
			// INVALID_TXN_STATE, which franz-go does not retry: with
			// transaction version 2 the marker guard once answered it
			// when the previous transaction's marker was resent by
			// the new coordinator (node/txn_verify.go).
			t.Logf("produce in a transaction: %v (aborting it)", err)
			if errors.Is(err, kerr.InvalidTxnState) {
				t.Errorf("produce in the session's own transaction refused for good: %v", err)
			}
			try = kgo.TryAbort
		}
		committed, err := s.End(pctx, try)
		cancel()
		switch {
		case err != nil:
			failures++
			t.Logf("end: %v (not committed; the records come again)", err)
			// A failed End (its coordinator killed mid-call) can leave
			// the session in its transaction; abort it, as franz-go
			// asks, before the next Begin.
			abortOpen(ctx, t, s)
		case committed:
			done.Add(int64(len(recs)))
		default:
			failures++
		}
	}
	t.Logf("transform: %d inputs committed, %d transactions failed or aborted", done.Load(), failures)
}

// abortOpen ends a transaction a failed End left open, with bounded
// retries; a session with no transaction open answers at once.
func abortOpen(ctx context.Context, t *testing.T, s *kgo.GroupTransactSession) {
	for try := 0; try < 5 && ctx.Err() == nil; try++ {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := s.End(actx, kgo.TryAbort)
		cancel()
		if err == nil {
			return
		}
		t.Logf("abort after a failed end: %v", err)
	}
}
