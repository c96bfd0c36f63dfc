package itest

// Idempotent producers under retries. A dropProxy sits between the client
// and the broker (the broker advertises the proxy's address, so every
// connection goes through it) and loses the response of every few produce
// requests, resetting the connection: the broker wrote the batch, the
// client retries it, possibly with four more pipelined batches behind it.
// The broker must recognise each retry as a duplicate and answer it with
// the original offset. Afterwards every value must be in the log exactly
// once, in produce order within its partition, at the offset its
// acknowledgement named.
//
// The same proxy with idempotence turned off must produce duplicates: that
// shows the retries really happen after the broker wrote, so the check
// above can fail.

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const idemPartitions = 3

// idemBroker starts a broker behind a dropProxy.
func idemBroker(t *testing.T) (*Broker, *dropProxy) {
	t.Helper()
	proxy := listenProxy(t)
	b := start(t, WithAdvertisedAddr(proxy.addr()))
	proxy.serve(b.KafkaAddr)
	return b, proxy
}

// ack is where the broker said a value went.
type ack struct {
	partition int32
	offset    int64
}

// produceThroughProxy produces n values "v-<i>" to partition i%3 with
// franz-go and returns the acknowledgements by value index; failed records
// fail the test when mustSucceed.
func produceThroughProxy(t *testing.T, proxyAddr, topic string, n int, mustSucceed bool, opts ...kgo.Opt) map[int]ack {
	t.Helper()
	cl := kgoClient(t, proxyAddr, append([]kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(2 << 10), // many small requests
		kgo.ProducerLinger(0),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }),
	}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), bulkWaitMax)
	defer cancel()
	var mu sync.Mutex
	acks := map[int]ack{}
	var failed []error
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		rec := &kgo.Record{Topic: topic, Partition: int32(i % idemPartitions), Value: fmt.Appendf(nil, "v-%d-%s", i, bytes.Repeat([]byte("x"), i%64))}
		cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, fmt.Errorf("value %d: %w", i, err))
				return
			}
			acks[i] = ack{r.Partition, r.Offset}
		})
	}
	wg.Wait()
	if mustSucceed && len(failed) > 0 {
		t.Fatalf("%d of %d records failed; first: %v", len(failed), n, failed[0])
	}
	return acks
}

// valueIndex recovers i from "v-<i>-xxx".
func valueIndex(t *testing.T, v []byte) int {
	t.Helper()
	s, ok := strings.CutPrefix(string(v), "v-")
	if ok {
		s, _, ok = strings.Cut(s, "-")
	}
	i, err := strconv.Atoi(s)
	if !ok || err != nil {
		t.Fatalf("foreign value %q in the log", v)
	}
	return i
}

func TestIdempotentProducerRetriesWriteOnce(t *testing.T) {
	t.Parallel()
	n := 6000
	if longRun() {
		n = 60000
	}
	b, proxy := idemBroker(t)
	const topic = "idem"
	makeTopic(t, b.KafkaAddr, topic, idemPartitions, nil)
	proxy.setDrops(7, n/100)
	acks := produceThroughProxy(t, proxy.addr(), topic, n, true) // idempotent: 5 requests in flight
	produces, answered, drops := proxy.counts()
	t.Logf("%d produce requests reached the broker, %d answers dropped, %d delivered", produces, drops, answered)
	if drops < 5 {
		t.Fatalf("only %d produce responses dropped: the retry path was hardly exercised", drops)
	}
	proxy.setDrops(0, 0)

	// Every value exactly once, in order within its partition, where its
	// acknowledgement said.
	seen := map[int]ack{}
	for p, recs := range readAll(t, b.KafkaAddr, topic) {
		last := -1
		for _, r := range recs {
			i := valueIndex(t, r.Value)
			if prev, dup := seen[i]; dup {
				t.Fatalf("value %d written twice: %s-%d offset %d and %d", i, topic, p, prev.offset, r.Offset)
			}
			seen[i] = ack{p, r.Offset}
			if i%idemPartitions != int(p) {
				t.Fatalf("value %d in partition %d", i, p)
			}
			if i <= last {
				t.Fatalf("%s-%d: value %d after value %d: out of produce order", topic, p, i, last)
			}
			last = i
		}
	}
	if len(seen) != n {
		t.Fatalf("log holds %d distinct values, want %d", len(seen), n)
	}
	checkAcks(t, topic, acks, seen)
}

// checkAcks fails if any acknowledged value is stored elsewhere than its
// acknowledgement said, listing the first few.
func checkAcks(t *testing.T, topic string, acks, stored map[int]ack) {
	t.Helper()
	var wrong []string
	for i := range len(acks) + len(stored) {
		a, ok := acks[i]
		if ok && stored[i] != a {
			wrong = append(wrong, fmt.Sprintf("value %d acknowledged at %s-%d@%d, stored at %s-%d@%d",
				i, topic, a.partition, a.offset, topic, stored[i].partition, stored[i].offset))
		}
	}
	if len(wrong) > 0 {
		t.Fatalf("%d of %d acknowledgements name the wrong offset; first ones:\n%s",
			len(wrong), len(acks), strings.Join(wrong[:min(len(wrong), 12)], "\n"))
	}
}

// TestNonIdempotentRetriesDuplicate is the control: without idempotence
// the same lost responses must leave duplicates, or the proxy is not
// forcing retries of writes the broker already made.
func TestNonIdempotentRetriesDuplicate(t *testing.T) {
	t.Parallel()
	const n = 2000
	b, proxy := idemBroker(t)
	const topic = "not-idem"
	makeTopic(t, b.KafkaAddr, topic, idemPartitions, nil)
	proxy.setDrops(7, 10)
	produceThroughProxy(t, proxy.addr(), topic, n, false, kgo.DisableIdempotentWrite())
	_, _, drops := proxy.counts()
	proxy.setDrops(0, 0)
	count := map[int]int{}
	dups := 0
	for _, recs := range readAll(t, b.KafkaAddr, topic) {
		for _, r := range recs {
			i := valueIndex(t, r.Value)
			count[i]++
			if count[i] == 2 {
				dups++
			}
		}
	}
	t.Logf("%d responses dropped, %d values duplicated", drops, dups)
	if drops == 0 || dups == 0 {
		t.Fatalf("%d responses dropped and %d duplicates: without idempotence, lost responses must cause duplicates", drops, dups)
	}
}

// TestDuplicateBatchAnsweredWithOriginalOffset sends idempotent batches
// by hand: a resent batch (same producer, epoch and sequences) is a
// duplicate, answered with the base offset it got the first time and not
// written again; a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER; an old
// epoch is INVALID_PRODUCER_EPOCH.
func TestDuplicateBatchAnsweredWithOriginalOffset(t *testing.T) {
	t.Parallel()
	b := start(t)
	const topic = "dup-raw"
	makeTopic(t, b.KafkaAddr, topic, 2, nil)
	rc := dialRaw(t, b.KafkaAddr)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version = 1
	init.TransactionTimeoutMillis = 60000
	resp, err := rc.roundTrip(init)
	if err != nil {
		t.Fatal(err)
	}
	ip := resp.(*kmsg.InitProducerIDResponse)
	if err := kerr.ErrorForCode(ip.ErrorCode); err != nil {
		t.Fatalf("InitProducerId: %v", err)
	}
	batch := func(seq int32, n int, epoch int16) []byte {
		s := batchSpec{producerID: ip.ProducerID, epoch: epoch, baseSeq: seq, timeMs: time.Now().UnixMilli()}
		for i := range n {
			s.values = append(s.values, fmt.Appendf(nil, "seq-%d", int(seq)+i))
		}
		return s.build()
	}
	// Five batches of sizes 1..5: offsets 0, 1, 3, 6, 10; sequences the same.
	var bases []int64
	seq := int32(0)
	for n := 1; n <= 5; n++ {
		code, base := rc.produceRaw(7, topic, 0, batch(seq, n, ip.ProducerEpoch))
		if code != 0 {
			t.Fatalf("batch at sequence %d: %v", seq, kerr.ErrorForCode(code))
		}
		bases = append(bases, base)
		seq += int32(n)
	}
	// Resend each of them, newest first: each must get its first answer.
	seq = 15
	for n := 5; n >= 1; n-- {
		seq -= int32(n)
		code, base := rc.produceRaw(7, topic, 0, batch(seq, n, ip.ProducerEpoch))
		if code != 0 || base != bases[n-1] {
			t.Errorf("resent batch at sequence %d (%d records): error %v base offset %d, want no error and %d",
				seq, n, kerr.ErrorForCode(code), base, bases[n-1])
		}
	}
	// A duplicate in one partition and a new batch in another, in one
	// request: the duplicate gets its original offset, the new batch its
	// own, each answered only once committed.
	req := produceRequest(7, -1, topic, 0, batch(10, 5, ip.ProducerEpoch))
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 1
	rp.Records = batch(0, 2, ip.ProducerEpoch)
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	resp, err = rc.roundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range resp.(*kmsg.ProduceResponse).Topics[0].Partitions {
		want := map[int32]int64{0: bases[4], 1: 0}[sp.Partition]
		if sp.ErrorCode != 0 || sp.BaseOffset != want {
			t.Errorf("two-partition produce, partition %d (%s): error %v base offset %d, want no error and %d",
				sp.Partition, map[int32]string{0: "duplicate", 1: "new"}[sp.Partition], kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset, want)
		}
	}
	if code, _ := rc.produceRaw(7, topic, 0, batch(16, 1, ip.ProducerEpoch)); code != kerr.OutOfOrderSequenceNumber.Code {
		t.Errorf("sequence 16 after 14: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", kerr.ErrorForCode(code))
	}
	if ip.ProducerEpoch > 0 {
		if code, _ := rc.produceRaw(7, topic, 0, batch(15, 1, ip.ProducerEpoch-1)); code != kerr.InvalidProducerEpoch.Code {
			t.Errorf("old epoch: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
		}
	}
	if end := endOffsets(t, b.KafkaAddr, topic)[0]; end != 15 {
		t.Errorf("high watermark %d after 15 distinct records and 5 duplicates, want 15", end)
	}
}
