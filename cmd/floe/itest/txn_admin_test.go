package itest

// Transaction administration with real clients (issue 16): franz-go's
// kadm DescribeProducers (API 61) and the floe txn CLI (list, describe,
// describe-producers, as kafka-transactions.sh) against a transaction
// while it is open and after it committed.

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestTxnAdmin(t *testing.T) {
	b := start(t)
	const topic, id = "txn-adm", "adm-1"
	makeTopic(t, b.KafkaAddr, topic, 2, nil)
	pr := kgoClient(t, b.KafkaAddr, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := ctxFor(t, opWaitMax)
	if err := pr.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	// Partition 1 first takes an idempotent record of another producer,
	// so the open transaction starts at offset 1 there.
	plain := kgoClient(t, b.KafkaAddr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := plain.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("plain")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for _, v := range []string{"a", "b", "c"} {
		recs = append(recs, &kgo.Record{Partition: 1, Value: []byte(v)})
	}
	if err := pr.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pid, epoch, err := pr.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	plainPID, _, err := plain.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}

	adm := kadm.NewClient(kgoClient(t, b.KafkaAddr))
	producers := func() map[int64]kadm.DescribedProducer {
		t.Helper()
		d, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {1: {}}})
		if err != nil {
			t.Fatalf("DescribeProducers: %v", err)
		}
		p, ok := d[topic].Partitions[1]
		if !ok || p.Err != nil {
			t.Fatalf("DescribeProducers %s-1: %+v", topic, p)
		}
		return p.ActiveProducers
	}
	open := producers()
	if got := open[pid]; got.ProducerEpoch != epoch || got.LastSequence != 2 || got.CurrentTxnStartOffset != 1 {
		t.Fatalf("open transaction: producer %d is %+v, want epoch %d, last sequence 2, transaction from offset 1", pid, got, epoch)
	}
	if got := open[plainPID]; got.LastSequence != 0 || got.CurrentTxnStartOffset != -1 || got.LastTimestamp <= 0 {
		t.Fatalf("idempotent producer %d is %+v, want last sequence 0, no transaction, a timestamp", plainPID, got)
	}
	// A partition that does not exist is named, not dropped (asked of the
	// broker directly: kadm does not route a partition without a leader).
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{7}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, kgoClient(t, b.KafkaAddr).Broker(1))
	if err != nil {
		t.Fatalf("DescribeProducers of a missing partition: %v", err)
	}
	if ps := resp.Topics[0].Partitions; len(ps) != 1 || ps[0].Partition != 7 || ps[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("missing partition: %+v, want UNKNOWN_TOPIC_OR_PARTITION", ps)
	}

	// The CLI, while the transaction is open.
	list := floe(t, "txn", "list", "--brokers", b.KafkaAddr)
	mustLine(t, list, id, "Ongoing", itoa64(pid))
	desc := floe(t, "txn", "describe", "--brokers", b.KafkaAddr, "--transactional-id", id)
	mustLine(t, desc, id, "Ongoing", itoa64(pid), topic+"-1")
	prods := floe(t, "txn", "describe-producers", "--brokers", b.KafkaAddr, "--topic", topic, "--partition", "1")
	mustLine(t, prods, topic, itoa64(pid), " 2 ", " 1")
	// Metrics: one transaction open, holding partition 1's LSO at 1 with
	// 3 committed records (the transaction's) above it.
	m := scrapeMetrics(t, b)
	wantMetric(t, m, `floe_txn_open`, 1)
	wantMetric(t, m, `floe_txn_started_total`, 1)
	wantMetric(t, m, `floe_partition_open_transactions{partition="1",topic="txn-adm"}`, 1)
	wantMetric(t, m, `floe_partition_last_stable_offset{partition="1",topic="txn-adm"}`, 1)
	wantMetric(t, m, `floe_partition_lso_lag{partition="1",topic="txn-adm"}`, 3)

	if err := pr.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	eventually(t, opWaitMax, "the committed transaction to leave the partition", func() bool {
		return producers()[pid].CurrentTxnStartOffset == -1
	})
	eventually(t, opWaitMax, "CompleteCommit", func() bool {
		return strings.Contains(floe(t, "txn", "describe", "--brokers", b.KafkaAddr, "--transactional-id", id), "CompleteCommit")
	})
	if out := floe(t, "txn", "list", "--brokers", b.KafkaAddr, "--state", "Ongoing"); strings.Contains(out, id) {
		t.Fatalf("txn list --state Ongoing lists the committed %s:\n%s", id, out)
	}
	mustLine(t, floe(t, "txn", "list", "--brokers", b.KafkaAddr, "--state", "CompleteCommit"), id, "CompleteCommit")
	// A second transaction, aborted.
	if err := pr.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := pr.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := pr.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	eventually(t, opWaitMax, "CompleteAbort", func() bool {
		return strings.Contains(floe(t, "txn", "describe", "--brokers", b.KafkaAddr, "--transactional-id", id), "CompleteAbort")
	})
	m = scrapeMetrics(t, b)
	wantMetric(t, m, `floe_txn_open`, 0)
	wantMetric(t, m, `floe_txn_started_total`, 2)
	wantMetric(t, m, `floe_txn_committed_total`, 1)
	wantMetric(t, m, `floe_txn_aborted_total{cause="end"}`, 1)
	wantMetric(t, m, `floe_txn_aborted_total{cause="timeout"}`, 0)
	wantMetric(t, m, `floe_txn_marker_retries_total`, 0)
	wantMetric(t, m, `floe_partition_lso_lag{partition="1",topic="txn-adm"}`, 0)
	wantMetric(t, m, `floe_partition_open_transactions{partition="0",topic="txn-adm"}`, 0)
	t.Logf("open:\n%s%s%s", list, desc, prods)
}

// mustLine fails unless some line of out contains every one of parts.
func mustLine(t *testing.T, out string, parts ...string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line+" ", p)
		}
		if ok {
			return
		}
	}
	t.Fatalf("no line holds all of %q in:\n%s", parts, out)
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// scrapeMetrics returns a broker's /metrics as series → value.
func scrapeMetrics(t *testing.T, b *Broker) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + b.AdminAddr + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if line == "" || line[0] == '#' || i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

func wantMetric(t *testing.T, m map[string]float64, series string, want float64) {
	t.Helper()
	if got, ok := m[series]; !ok || got != want {
		t.Fatalf("metric %s = %v (exported: %v), want %v", series, got, ok, want)
	}
}
