package itest

// Exactly-once with real clients (issue 16): franz-go's
// GroupTransactSession consume-transform-produce pipeline. Input records
// are copied to an output topic inside transactions that also commit the
// consumed offsets; every third transaction is aborted on purpose, so the
// session rewinds to the committed offsets and processes those records
// again. Read read_committed, the output must hold each input record's
// result exactly once, in input order per key; read read_uncommitted it
// must hold more (the aborted copies), which shows the aborts happened and
// that read_committed filtering is what hides them.
//
// Floe finalizes transaction.version 2, so franz-go (1.18+) runs the
// KIP-890 part 2 flow: no AddPartitionsToTxn or AddOffsetsToTxn (Produce
// v12 and TxnOffsetCommit v5 add implicitly), and every EndTxn (v5) bumps
// the producer epoch, which the test checks with DescribeTransactions. The
// same pipeline with the client capped at Kafka 3.9's versions runs the
// classic flow (the epoch stays).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

const (
	txnInputs = 300
	txnKeys   = 10
)

func TestTxnGroupTransactSession(t *testing.T) {
	b := start(t)
	makeTopic(t, b.KafkaAddr, "txn-in", 3, nil)
	makeTopic(t, b.KafkaAddr, "txn-out", 3, nil)
	produceInputs(t, b.KafkaAddr, "txn-in")

	rounds := runTransform(t, b.KafkaAddr, "txn-in", "txn-out", "etl", "etl-1", txnInputs)
	// Every end bumped the epoch (transaction version 2): at least one
	// per transaction.
	if epoch := txnEpoch(t, b.KafkaAddr, "etl-1"); int(epoch) < rounds {
		t.Fatalf("producer epoch %d after %d transactions: the client did not use transaction version 2", epoch, rounds)
	}
	checkPipeline(t, b.KafkaAddr)
}

// TestTxnGroupTransactSessionV1: the same pipeline with franz-go capped at
// Kafka 3.9's API versions (EndTxn 4, Produce 11), so it uses the classic
// flow (AddPartitionsToTxn, AddOffsetsToTxn, one epoch for every
// transaction): clients that do not know transaction version 2 keep
// working.
func TestTxnGroupTransactSessionV1(t *testing.T) {
	b := start(t)
	makeTopic(t, b.KafkaAddr, "txn-in", 3, nil)
	makeTopic(t, b.KafkaAddr, "txn-out", 3, nil)
	produceInputs(t, b.KafkaAddr, "txn-in")

	runTransform(t, b.KafkaAddr, "txn-in", "txn-out", "etl", "etl-1", txnInputs, kgo.MaxVersions(kversion.V3_9_0()))
	if epoch := txnEpoch(t, b.KafkaAddr, "etl-1"); epoch != 0 {
		t.Fatalf("producer epoch %d: the capped client's ends bumped it (transaction version 2)", epoch)
	}
	checkPipeline(t, b.KafkaAddr)
}

// txnEpoch returns the producer epoch the coordinator holds for txnID.
func txnEpoch(t *testing.T, addr, txnID string) int16 {
	t.Helper()
	adm := kadm.NewClient(kgoClient(t, addr))
	ds, err := adm.DescribeTransactions(ctxFor(t, opWaitMax), txnID)
	if err != nil {
		t.Fatalf("describe transactions: %v", err)
	}
	d, ok := ds[txnID]
	if !ok || d.Err != nil {
		t.Fatalf("describe %s: %+v", txnID, d)
	}
	return d.ProducerEpoch
}

// checkPipeline checks the output of runTransform: each input exactly
// once read_committed, more read_uncommitted.
func checkPipeline(t *testing.T, addr string) {
	t.Helper()
	committed := consumeAll(t, addr, "txn-out", kgo.ReadCommitted(), txnInputs)
	checkExactlyOnce(t, committed)
	uncommitted := consumeAll(t, addr, "txn-out", kgo.ReadUncommitted(), txnInputs)
	if len(uncommitted) <= len(committed) {
		t.Fatalf("read_uncommitted saw %d records, read_committed %d: no aborted transaction reached the log", len(uncommitted), len(committed))
	}
	t.Logf("read_committed %d records, read_uncommitted %d", len(committed), len(uncommitted))
}

// produceInputs writes txnInputs records "i" keyed k<i%txnKeys>.
func produceInputs(t *testing.T, addr, topic string) {
	t.Helper()
	cl := kgoClient(t, addr)
	var recs []*kgo.Record
	for i := range txnInputs {
		recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i%txnKeys), Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctxFor(t, opWaitMax), recs...).FirstErr(); err != nil {
		t.Fatalf("produce inputs: %v", err)
	}
}

// runTransform copies want input records to out in transactions until the
// committed offsets of group cover them, aborting every third transaction.
// It returns how many transactions it ran.
func runTransform(t *testing.T, addr, in, out, group, txnID string, want int, opts ...kgo.Opt) int {
	t.Helper()
	s, err := kgo.NewGroupTransactSession(append([]kgo.Opt{
		kgo.SeedBrokers(addr), kgo.MetadataMinAge(50 * time.Millisecond),
		kgo.TransactionalID(txnID), kgo.TransactionTimeout(10 * time.Second),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(in),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DefaultProduceTopic(out),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := ctxFor(t, 2*time.Minute)
	done, round := 0, 0
	for done < want {
		if ctx.Err() != nil {
			t.Fatalf("transform: %d of %d records committed before the deadline", done, want)
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := s.PollRecords(pctx, 40)
		cancel()
		if err := fatalFetchErr(fs); err != nil {
			t.Fatalf("poll: %v", err)
		}
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		if err := s.Begin(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		var outs []*kgo.Record
		for _, r := range recs {
			outs = append(outs, &kgo.Record{Key: r.Key, Value: fmt.Appendf(nil, "%s/%d:%s", r.Topic, r.Partition, r.Value)})
		}
		// Synchronously, so an aborted transaction's records are in the
		// log (not merely dropped from the client's buffer).
		if err := s.ProduceSync(ctx, outs...).FirstErr(); err != nil {
			t.Logf("produce in transaction %d: %v", round+1, err)
		}
		round++
		commit := kgo.TryCommit
		if round%3 == 0 {
			commit = kgo.TryAbort
		}
		committed, err := s.End(ctx, commit)
		if err != nil {
			t.Fatalf("end transaction %d: %v", round, err)
		}
		if committed {
			done += len(recs)
		}
	}
	if round < 3 {
		t.Fatalf("only %d transactions: no abort was exercised", round)
	}
	return round
}

// fatalFetchErr returns the first fetch error that is not the poll's own
// timeout.
func fatalFetchErr(fs kgo.Fetches) error {
	var first error
	fs.EachError(func(_ string, _ int32, err error) {
		if first == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			first = err
		}
	})
	return first
}

// consumeAll reads topic from the start at the given isolation level until
// it has seen at least min records and then nothing new for a while.
func consumeAll(t *testing.T, addr, topic string, level kgo.IsolationLevel, min int) []*kgo.Record {
	t.Helper()
	cl := kgoClient(t, addr, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ctxFor(t, opWaitMax)
	var out []*kgo.Record
	idle := 0
	for idle < 3 {
		if ctx.Err() != nil {
			t.Fatalf("read %s: %d records before the deadline, want at least %d", topic, len(out), min)
		}
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r); n++ })
		if n == 0 && len(out) >= min {
			idle++
		}
	}
	return out
}

// checkExactlyOnce checks that the output holds every input exactly once
// and, per key, in input order.
func checkExactlyOnce(t *testing.T, recs []*kgo.Record) {
	t.Helper()
	seen := map[int]int{}
	lastByKey := map[string]int{}
	byPartition := map[int32][]*kgo.Record{}
	for _, r := range recs {
		byPartition[r.Partition] = append(byPartition[r.Partition], r)
	}
	for _, p := range sortedPartitions(byPartition) {
		for _, r := range byPartition[p] {
			v := string(r.Value)
			i, err := strconv.Atoi(v[strings.LastIndexByte(v, ':')+1:])
			if err != nil {
				t.Fatalf("output value %q", v)
			}
			seen[i]++
			k := string(r.Key)
			if last, ok := lastByKey[k]; ok && i <= last {
				t.Fatalf("key %s: input %d after %d in the output", k, i, last)
			}
			lastByKey[k] = i
		}
	}
	for i := range txnInputs {
		if seen[i] != 1 {
			t.Fatalf("input %d appears %d times in the read_committed output", i, seen[i])
		}
	}
	if len(recs) != txnInputs {
		t.Fatalf("%d output records, want %d", len(recs), txnInputs)
	}
}
