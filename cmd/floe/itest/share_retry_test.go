package itest

// Floe's retry policy for share groups (beyond Kafka, issue 18) with
// franz-go's share consumer: the group configs floe.share.retry.backoff.*
// (set with IncrementalAlterConfigs on the GROUP resource) delay each
// redelivery of a released record, and share.delivery.count.limit archives
// it at the limit. The test checks lower bounds only (a redelivery never
// comes before its backoff), which a slow machine cannot break.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func setGroupConfigs(t *testing.T, cl *kgo.Client, group string, kv ...string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctxFor(t, opWaitMax), cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter group configs of %s: %v %+v", group, err, resp)
	}
}

func TestShareGroupRetryBackoff(t *testing.T) {
	b := start(t)
	makeTopic(t, b.KafkaAddr, "jobs", 1, nil)
	admin := kgoClient(t, b.KafkaAddr)
	// Exponential: 1 s after the first delivery, 2 s after the second;
	// archived after the third.
	setGroupConfigs(t, admin, "retry", "share.auto.offset.reset", "earliest", "share.delivery.count.limit", "3",
		"floe.share.retry.backoff.ms", "1000", "floe.share.retry.backoff.multiplier", "2")
	produceValues(t, b.KafkaAddr, "jobs", 1)

	cl := newShareClient(t, b.KafkaAddr, "retry", "jobs")
	ctx, cancel := context.WithTimeout(context.Background(), bulkWaitMax)
	defer cancel()
	var mu sync.Mutex
	var at []time.Time
	var counts []int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				mu.Lock()
				at, counts = append(at, time.Now()), append(counts, r.DeliveryCount())
				mu.Unlock()
				r.Ack(kgo.AckRelease)
			})
			cl.FlushAcks(ctx)
		}
	}()
	eventually(t, bulkWaitMax, "three deliveries", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(at) >= 3
	})
	// Past the third delivery the record is archived: wait longer than
	// any backoff and check nothing else came.
	time.Sleep(3 * time.Second)
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(at) != 3 || counts[0] != 1 || counts[1] != 2 || counts[2] != 3 {
		t.Fatalf("deliveries with counts %v, want 1, 2, 3 and then none (archived at the limit)", counts)
	}
	for i, want := range []time.Duration{time.Second, 2 * time.Second} {
		if gap := at[i+1].Sub(at[i]); gap < want {
			t.Errorf("delivery %d came %v after delivery %d: before its backoff of %v", i+2, gap, i+1, want)
		}
	}
	t.Logf("redeliveries after %v and %v", at[1].Sub(at[0]).Round(time.Millisecond), at[2].Sub(at[1]).Round(time.Millisecond))
}
