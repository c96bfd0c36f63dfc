package workload

import (
	"context"
	"testing"
	"time"

	"github.com/floe-broker/floe/jepsen/check"
	"github.com/floe-broker/floe/jepsen/history"
	"github.com/twmb/franz-go/pkg/kfake"
)

// The whole client side against franz-go's in-memory Kafka (kfake), no
// Docker: every kind of operation gets recorded, and the checkers find the
// history of a correct broker valid.
func TestWorkloadAgainstKfake(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of real traffic")
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	rec := history.NewRecorder(nil, func() int64 { return int64(time.Since(start)) })
	w, err := New(Config{Brokers: c.ListenAddrs(), Partitions: 3, Replication: 3, Producers: 3, Rate: 200,
		Groups: 1, Consumers: 2, Fetchers: 1, OpTimeout: 5 * time.Second, Seed: 1,
		TxnProducers: 2, TxnRate: 50, TxnTimeout: 5 * time.Second}, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	topo, err := w.Topology(ctx)
	if err != nil || len(topo.Leaders) != 3 || len(topo.Brokers) != 3 {
		t.Fatalf("topology %+v, %v", topo, err)
	}
	if coords, err := w.Coordinators(ctx); err != nil || len(coords) != 2 {
		t.Fatalf("transaction coordinators %v, %v", coords, err)
	}
	w.Start(ctx)
	time.Sleep(3 * time.Second)
	w.StopProducers()
	if err := w.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.FinalRead(ctx); err != nil {
		t.Fatal(err)
	}
	h := rec.History()
	seen := map[history.Func]int{}
	for _, op := range h {
		if op.Type == history.OK {
			seen[op.F]++
		}
	}
	for _, f := range []history.Func{history.Produce, history.Poll, history.Commit, history.FetchOffset, history.Fetch, history.Read, history.Assign,
		history.Txn, history.TxnRead, history.TxnFinal, history.TxnOffsets, history.TxnOffsetsFinal} {
		if seen[f] == 0 {
			t.Errorf("no ok %s in %d events", f, len(h))
		}
	}
	// Some transaction's offsets became visible: TxnOffsetCommit went
	// through and committed.
	held := 0
	for _, op := range h {
		if op.Type == history.OK && (op.F == history.TxnOffsets || op.F == history.TxnOffsetsFinal) {
			for _, o := range op.Offsets {
				if o.Offset >= 0 {
					held++
				}
			}
		}
	}
	if held == 0 {
		for _, op := range h {
			if op.F == history.Txn && op.Error != "" {
				t.Log(op.Error)
			}
		}
		t.Errorf("no offset read holds a transaction's offset")
	}
	rep := check.Check(h, check.Options{})
	if rep.Valid != check.Valid {
		t.Fatalf("history of a correct broker judged %s:\n%s", rep.Valid, rep.Summary())
	}
	if r, _ := rep.Result(check.TxnOutcomes); r.Stats["committed"] == 0 || r.Stats["aborted"] == 0 || r.Stats["offset-reads"] == 0 {
		t.Errorf("transactions: %v", r.Stats)
	}
}
