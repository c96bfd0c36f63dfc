package itest

// Share groups (KIP-932 queues, issue 18) with franz-go's kgo.ShareGroup
// consumer on one broker: several consumers share one partition and every
// record is delivered and accepted once; a consumer cut off mid-batch has
// its records redelivered to another after the lock expires (delivery
// count 2, each to the live consumer once); bad acknowledgements get Kafka's
// error codes and change nothing. Waits are bounded; nothing is timed.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const shareLock = 4 * time.Second

func shareBroker(t *testing.T) *Broker {
	return start(t, WithFlags("--share-auto-offset-reset=earliest",
		fmt.Sprintf("--share-record-lock-duration-ms=%d", shareLock.Milliseconds()),
		"--share-heartbeat-interval-ms=1000"))
}

func produceValues(t *testing.T, addr, topic string, n int) {
	t.Helper()
	cl := kgoClient(t, addr)
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(ctxFor(t, opWaitMax), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// delivery is one record handed to one consumer.
type delivery struct {
	consumer int
	offset   int64
	count    int32
}

type deliveries struct {
	mu   sync.Mutex
	all  []delivery
	seen map[int64]bool
}

func (d *deliveries) add(c int, r *kgo.Record) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.all = append(d.all, delivery{c, r.Offset, r.DeliveryCount()})
	if d.seen == nil {
		d.seen = map[int64]bool{}
	}
	d.seen[r.Offset] = true
}

func (d *deliveries) distinct() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.seen)
}

// shareConsumer polls as consumer c until ctx ends, accepting every
// record unless hold is set (then it stops after its first batch, never
// acknowledging it).
func shareConsumer(ctx context.Context, cl *kgo.Client, c int, d *deliveries, hold bool, wg *sync.WaitGroup) {
	defer wg.Done()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		got := false
		fs.EachRecord(func(r *kgo.Record) {
			got = true
			d.add(c, r)
			if !hold {
				r.Ack(kgo.AckAccept)
			}
		})
		if hold && got {
			return
		}
	}
}

func newShareClient(t *testing.T, addr, group, topic string, opts ...kgo.Opt) *kgo.Client {
	return kgoClient(t, addr, append([]kgo.Opt{kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
		kgo.ShareMaxRecords(10), kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)...)
}

func TestShareGroupConsumersShareOnePartition(t *testing.T) {
	b := shareBroker(t)
	const n = 300
	makeTopic(t, b.KafkaAddr, "q1", 1, nil)
	produceValues(t, b.KafkaAddr, "q1", n)

	var d deliveries
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), bulkWaitMax)
	defer cancel()
	for c := 0; c < 3; c++ {
		cl := newShareClient(t, b.KafkaAddr, "sg1", "q1")
		wg.Add(1)
		go shareConsumer(ctx, cl, c, &d, false, &wg)
	}
	eventually(t, bulkWaitMax, "every record delivered", func() bool { return d.distinct() == n })
	cancel()
	wg.Wait()

	per := map[int]int{}
	count := map[int64]int{}
	for _, x := range d.all {
		per[x.consumer]++
		count[x.offset]++
		if x.count != 1 {
			t.Errorf("offset %d delivered to consumer %d with delivery count %d: redelivered though accepted in time", x.offset, x.consumer, x.count)
		}
	}
	for off := int64(0); off < n; off++ {
		if count[off] != 1 {
			t.Errorf("offset %d delivered %d times", off, count[off])
		}
	}
	if len(per) < 2 {
		t.Errorf("records went to consumers %v: want at least two sharing the partition", per)
	}
	t.Logf("deliveries per consumer: %v", per)
}

func TestShareGroupCutConsumerRedeliveredAfterLock(t *testing.T) {
	b := shareBroker(t)
	const n = 40
	makeTopic(t, b.KafkaAddr, "q2", 1, nil)
	produceValues(t, b.KafkaAddr, "q2", n)

	var d deliveries
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), bulkWaitMax)
	defer cancel()

	// Consumer 0 takes one batch and is cut off before acknowledging it.
	sev := &severable{}
	dead := newShareClient(t, b.KafkaAddr, "sg2", "q2", kgo.Dialer(sev.dial), kgo.RetryTimeout(time.Second))
	wg.Add(1)
	go shareConsumer(ctx, dead, 0, &d, true, &wg)
	eventually(t, opWaitMax, "a first batch", func() bool { return d.distinct() > 0 })
	sev.sever()
	d.mu.Lock()
	held := map[int64]bool{}
	for _, x := range d.all {
		held[x.offset] = true
	}
	d.mu.Unlock()

	live := newShareClient(t, b.KafkaAddr, "sg2", "q2")
	wg.Add(1)
	go shareConsumer(ctx, live, 1, &d, false, &wg)
	eventually(t, bulkWaitMax, "every record delivered, the cut consumer's redelivered", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		redelivered := 0
		for _, x := range d.all {
			if x.consumer == 1 && held[x.offset] {
				redelivered++
			}
		}
		return len(d.seen) == n && redelivered == len(held)
	})
	cancel()
	wg.Wait()

	// The cut consumer may also have fetched a batch ahead that it never
	// polled: those records come back with count 2 as well. Anything
	// else is delivered once, with count 1.
	toLive := map[int64]int{}
	for _, x := range d.all {
		if x.consumer == 1 {
			toLive[x.offset]++
		}
		switch {
		case x.consumer == 0 && x.count != 1:
			t.Errorf("cut consumer got offset %d with delivery count %d", x.offset, x.count)
		case x.consumer == 1 && held[x.offset] && x.count != 2:
			t.Errorf("offset %d redelivered with delivery count %d, want 2", x.offset, x.count)
		case x.consumer == 1 && x.count > 2:
			t.Errorf("offset %d delivered with count %d", x.offset, x.count)
		}
	}
	for off, k := range toLive {
		if k != 1 {
			t.Errorf("offset %d delivered %d times to the live consumer", off, k)
		}
	}
	t.Logf("cut consumer held %d records; all %d redelivered with count 2", len(held), len(held))
}

// TestShareAcknowledgeBadInput: acknowledgements of records not acquired,
// held by another member, of unknown types or out of range get Kafka's
// codes, and the records stay where they were (redelivered with count 2
// after the lock, never accepted by the bad acks).
func TestShareAcknowledgeBadInput(t *testing.T) {
	b := shareBroker(t)
	makeTopic(t, b.KafkaAddr, "q3", 1, nil)
	produceValues(t, b.KafkaAddr, "q3", 10)
	cl := kgoClient(t, b.KafkaAddr)
	tds, err := kadm.NewClient(cl).ListTopics(ctxFor(t, opWaitMax), "q3")
	if err != nil {
		t.Fatal(err)
	}
	id := tds["q3"].ID
	ctx := ctxFor(t, opWaitMax)
	// Raw heartbeats are not retried by the client: retry while the
	// coordinator is still coming up.
	join := func(member string) {
		eventually(t, opWaitMax, "join "+member, func() bool {
			hb := kmsg.NewPtrShareGroupHeartbeatRequest()
			hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "sg3", member, []string{"q3"}
			resp, err := hb.RequestWith(ctx, cl)
			if err == nil {
				err = kerr.ErrorForCode(resp.ErrorCode)
			}
			if err != nil && !kerr.IsRetriable(err) && err != kerr.NotCoordinator && err != kerr.CoordinatorNotAvailable {
				t.Fatalf("join %s: %v", member, err)
			}
			return err == nil
		})
	}
	join("holder")
	join("other")
	fetch := func(member string) *kmsg.ShareFetchResponse {
		f := kmsg.NewPtrShareFetchRequest()
		f.GroupID, f.MemberID, f.ShareSessionEpoch = kmsg.StringPtr("sg3"), kmsg.StringPtr(member), 0
		f.MaxRecords, f.BatchSize, f.MaxBytes, f.MaxWaitMillis = 5, 5, 1<<20, 100
		f.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}}}
		resp, err := f.RequestWith(ctx, cl.Broker(1))
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("share fetch by %s: %v %v", member, err, kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp
	}
	got := fetch("holder").Topics[0].Partitions[0].AcquiredRecords
	if len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 4 || got[0].DeliveryCount != 1 {
		t.Fatalf("holder acquired %+v, want 0-4 count 1", got)
	}
	fetch("other") // acquires 5-9 and opens its session (epoch 1 next)
	epochs := map[string]int32{"holder": 1, "other": 1}
	ack := func(member string, first, last int64, types ...int8) int16 {
		a := kmsg.NewPtrShareAcknowledgeRequest()
		a.GroupID, a.MemberID, a.ShareSessionEpoch = kmsg.StringPtr("sg3"), kmsg.StringPtr(member), epochs[member]
		a.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{
			Partition: 0, AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: first, LastOffset: last, AcknowledgeTypes: types}}}}}}
		resp, err := a.RequestWith(ctx, cl.Broker(1))
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("ack by %s: %v %v", member, err, kerr.ErrorForCode(resp.ErrorCode))
		}
		epochs[member]++
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	for _, c := range []struct {
		what        string
		member      string
		first, last int64
		types       []int8
		want        *kerr.Error
	}{
		{"another member's records", "other", 0, 4, []int8{1}, kerr.InvalidRecordState},
		{"an unknown acknowledgement type", "holder", 0, 4, []int8{7}, kerr.InvalidRequest},
		{"offsets never acquired", "holder", 20, 21, []int8{1}, kerr.InvalidRecordState},
		{"a range partly out of the window", "holder", 3, 30, []int8{1}, kerr.InvalidRecordState},
		{"a negative offset", "holder", -5, 2, []int8{1}, kerr.InvalidRecordState},
		{"first after last", "holder", 4, 2, []int8{1}, kerr.InvalidRequest},
	} {
		if code := ack(c.member, c.first, c.last, c.types...); code != c.want.Code {
			t.Errorf("ack of %s: %v, want %v", c.what, kerr.ErrorForCode(code), c.want)
		}
	}
	// A stale session epoch is refused at the top level.
	a := kmsg.NewPtrShareAcknowledgeRequest()
	a.GroupID, a.MemberID, a.ShareSessionEpoch = kmsg.StringPtr("sg3"), kmsg.StringPtr("holder"), 1
	if resp, err := a.RequestWith(ctx, cl.Broker(1)); err != nil || resp.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Errorf("stale epoch: %v %v", err, resp)
	}
	// Nothing was accepted: once the holder's lock expires, 0-4 go to a
	// consumer with delivery count 2 (and 5-9 likewise from other).
	var d deliveries
	var wg sync.WaitGroup
	cctx, cancel := context.WithTimeout(context.Background(), bulkWaitMax)
	defer cancel()
	wg.Add(1)
	go shareConsumer(cctx, newShareClient(t, b.KafkaAddr, "sg3", "q3"), 1, &d, false, &wg)
	eventually(t, bulkWaitMax, "all ten delivered again", func() bool { return d.distinct() == 10 })
	cancel()
	wg.Wait()
	for _, x := range d.all {
		if x.count != 2 {
			t.Errorf("offset %d delivered with count %d, want 2 (first held, never acknowledged)", x.offset, x.count)
		}
	}
}
