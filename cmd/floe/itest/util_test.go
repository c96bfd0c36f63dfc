package itest

// Shared helpers of issue 5's tests: starting a broker from the binary
// TestMain built, franz-go clients, topics, and reading a partition back
// whole, both as records and as the raw stored batches.

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Bounds on waits (never speed assertions).
const (
	opWaitMax   = 60 * time.Second  // one admin call or a bounded read
	bulkWaitMax = 180 * time.Second // producing or consuming thousands of records
)

// longRun reports whether FLOE_ITEST_LONG=1 asks for the heavier variants.
func longRun() bool { return os.Getenv("FLOE_ITEST_LONG") == "1" }

// start starts a broker from the binary TestMain built.
func start(t testing.TB, opts ...Option) *Broker {
	t.Helper()
	return StartBroker(t, opts...)
}

// ctxFor returns a context bounded by d and ended with the test.
func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// kgoClient returns a franz-go client of addr, closed with the test.
func kgoClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	// A short metadata age: right after a topic is created, or a broker
	// restarted, leaders appear within moments, and the default (5s)
	// would make every such test wait.
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.MetadataMinAge(50 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// makeTopic creates a topic with replication factor 1 and the given
// configs (nil for defaults).
func makeTopic(t testing.TB, addr, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	adm := kadm.NewClient(kgoClient(t, addr))
	resp, err := adm.CreateTopic(ctxFor(t, opWaitMax), partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	waitLeaders(t, adm, topic, partitions)
}

// waitLeaders waits until every partition of topic answers ListOffsets,
// which only a leader that has committed in its term does: raw requests
// need no retry after that.
func waitLeaders(t testing.TB, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	deadline := time.Now().Add(opWaitMax)
	for {
		listed, err := adm.ListEndOffsets(ctxFor(t, opWaitMax), topic)
		ready := 0
		if err == nil {
			listed.Each(func(o kadm.ListedOffset) {
				if o.Err == nil {
					ready++
				}
			})
		}
		if ready == int(partitions) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d partitions have a leader after %v (%v)", topic, ready, partitions, opWaitMax, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// endOffsets returns each partition's high watermark. Errors are retried
// until opWaitMax: /readyz waits for every local replica's leader, but a
// leader must still commit in its term, and a broker asked may be a
// follower whose leader moved.
func endOffsets(t testing.TB, addr, topic string) map[int32]int64 {
	t.Helper()
	adm := kadm.NewClient(kgoClient(t, addr))
	deadline := time.Now().Add(opWaitMax)
	for {
		listed, err := adm.ListEndOffsets(ctxFor(t, opWaitMax), topic)
		out := map[int32]int64{}
		if err == nil {
			listed.Each(func(o kadm.ListedOffset) {
				if o.Err != nil && err == nil {
					err = fmt.Errorf("%s-%d: %w", topic, o.Partition, o.Err)
				}
				out[o.Partition] = o.Offset
			})
		}
		if err == nil && len(out) > 0 {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("list end offsets of %s: %v (%d partitions answered)", topic, err, len(out))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readAll consumes every partition of topic from offset 0 up to its
// current high watermark and returns the records by partition, in offset
// order.
func readAll(t testing.TB, addr, topic string) map[int32][]*kgo.Record {
	t.Helper()
	ends := endOffsets(t, addr, topic)
	out := map[int32][]*kgo.Record{}
	for p, end := range ends {
		out[p] = readRange(t, addr, topic, p, end)
	}
	return out
}

// readRange consumes offsets [0, end) of one partition.
func readRange(t testing.TB, addr, topic string, partition int32, end int64) []*kgo.Record {
	t.Helper()
	var recs []*kgo.Record
	if end <= 0 {
		return recs
	}
	cl := kgoClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {partition: kgo.NewOffset().At(0)},
	}), kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	ctx := ctxFor(t, bulkWaitMax)
	for int64(len(recs)) < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s-%d: read %d of %d records before giving up", topic, partition, len(recs), end)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, partition, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < end {
				recs = append(recs, r)
			}
		})
	}
	for i, r := range recs {
		if r.Offset != int64(i) {
			t.Fatalf("%s-%d: record %d has offset %d: offsets are not dense from 0", topic, partition, i, r.Offset)
		}
	}
	return recs
}

// storedBatch is one record batch as the broker stores and serves it.
type storedBatch struct {
	BaseOffset int64
	LastOffset int64 // BaseOffset + lastOffsetDelta
	Records    int32
	Codec      int8 // attributes bits 0-2: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
	Raw        []byte
}

// storedBatches fetches every batch of one partition below the high
// watermark with raw Fetch requests, so the caller sees exactly the bytes
// the broker serves: codec bits, CRCs and all.
func storedBatches(t testing.TB, cl *kgo.Client, topic string, partition int32) []storedBatch {
	t.Helper()
	ctx := ctxFor(t, bulkWaitMax)
	var out []storedBatch
	var next int64
	for {
		fp, err := fetchOnce(ctx, cl, topic, partition, next)
		if err != nil {
			t.Fatalf("raw fetch %s-%d at %d: %v", topic, partition, next, err)
		}
		batches, err := splitBatches(fp.RecordBatches)
		if err != nil {
			t.Fatalf("raw fetch %s-%d at %d: %v", topic, partition, next, err)
		}
		for _, b := range batches {
			if b.LastOffset >= next {
				out = append(out, b)
				next = b.LastOffset + 1
			}
		}
		if next >= fp.HighWatermark {
			return out
		}
		if len(batches) == 0 {
			t.Fatalf("raw fetch %s-%d at %d: no batch below high watermark %d", topic, partition, next, fp.HighWatermark)
		}
	}
}

// fetchOnce sends one Fetch v11 for one partition at offset.
func fetchOnce(ctx context.Context, cl *kgo.Client, topic string, partition int32, offset int64) (kmsg.FetchResponseTopicPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxWaitMillis = 100
	req.MinBytes = 1
	req.MaxBytes = 16 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = partition
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 8 << 20
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.FetchResponseTopicPartition{}, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return kmsg.FetchResponseTopicPartition{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kmsg.FetchResponseTopicPartition{}, fmt.Errorf("fetch response has %d topics", len(resp.Topics))
	}
	fp := resp.Topics[0].Partitions[0]
	return fp, kerr.ErrorForCode(fp.ErrorCode)
}

// splitBatches cuts a Fetch response's record bytes into v2 batches. A
// partial batch at the end (allowed by the protocol) is dropped.
func splitBatches(b []byte) ([]storedBatch, error) {
	var out []storedBatch
	for len(b) >= 12 {
		n := 12 + int(int32(uint32(b[8])<<24|uint32(b[9])<<16|uint32(b[10])<<8|uint32(b[11])))
		if n < 61 {
			return nil, fmt.Errorf("batch length %d", n-12)
		}
		if n > len(b) {
			break
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b[:n]); err != nil {
			return nil, err
		}
		if rb.Magic != 2 {
			return nil, fmt.Errorf("magic %d", rb.Magic)
		}
		out = append(out, storedBatch{BaseOffset: rb.FirstOffset,
			LastOffset: rb.FirstOffset + int64(rb.LastOffsetDelta), Records: rb.NumRecords,
			Codec: int8(rb.Attributes & 7), Raw: append([]byte(nil), b[:n]...)})
		b = b[n:]
	}
	return out, nil
}

// codecName names a batch codec.
func codecName(c int8) string {
	names := []string{"none", "gzip", "snappy", "lz4", "zstd"}
	if c >= 0 && int(c) < len(names) {
		return names[c]
	}
	return fmt.Sprintf("codec(%d)", c)
}

// sortedPartitions returns the keys of m in order.
func sortedPartitions[V any](m map[int32]V) []int32 {
	ps := make([]int32, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}
