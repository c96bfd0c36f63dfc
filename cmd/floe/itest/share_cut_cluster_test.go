package itest

// Issue 18's "a consumer killed mid-batch has its records redelivered
// after the lock expires", across a partition leader's kill -9 on 3
// brokers: one share consumer takes a batch and is cut off without
// acknowledging it, the partition's leader is killed with SIGKILL, and a
// live consumer then receives every record, the cut consumer's again with
// a higher delivery count, and no record twice with the same count.

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestShareGroupCutConsumerClusterLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a partition leader of a 3-broker cluster")
	}
	bs := startCluster(t, 3, WithFlags("--share-auto-offset-reset=earliest",
		fmt.Sprintf("--share-record-lock-duration-ms=%d", shareLock.Milliseconds()),
		"--share-heartbeat-interval-ms=1000", "--share-session-timeout-ms=6000"))
	const topic, n = "qcut", 60
	createReplicated(t, bs, topic, 1, 3)
	adm := kadm.NewClient(kgoClient(t, bs[0].KafkaAddr, kgo.SeedBrokers(seeds(bs)...)))
	lead := agreedLeader(t, bs, topic, 0)
	group, coord := groupNotOn(t, adm, lead)
	t.Logf("partition leader %d, group %s coordinated by %d", lead, group, coord)
	produceValues(t, bs[coord-1].KafkaAddr, topic, n)

	var d deliveries
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), bulkWaitMax)
	defer cancel()
	sev := &severable{}
	cut := newShareClient(t, bs[coord-1].KafkaAddr, group, topic, kgo.SeedBrokers(seeds(bs)...), kgo.Dialer(sev.dial))
	wg.Add(1)
	go shareConsumer(ctx, cut, 0, &d, true, &wg)
	eventually(t, opWaitMax, "a first batch", func() bool { return d.distinct() > 0 })
	sev.sever()
	d.mu.Lock()
	held := map[int64]bool{}
	for _, x := range d.all {
		held[x.offset] = true
	}
	d.mu.Unlock()
	bs[lead-1].Kill()
	t.Logf("cut consumer holds %d records; partition leader %d killed -9", len(held), lead)

	live := newShareClient(t, bs[coord-1].KafkaAddr, group, topic, kgo.SeedBrokers(seeds(bs)...))
	wg.Add(1)
	go shareConsumer(ctx, live, 1, &d, false, &wg)
	eventually(t, bulkWaitMax, "every record delivered, the cut consumer's again", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		again := map[int64]bool{}
		for _, x := range d.all {
			if x.consumer == 1 && held[x.offset] {
				again[x.offset] = true
			}
		}
		return len(d.seen) == n && len(again) == len(held)
	})
	cancel()
	wg.Wait()
	bs[lead-1].Restart()

	type key struct {
		off   int64
		count int32
	}
	seen := map[key]int{}
	for _, x := range d.all {
		seen[key{x.offset, x.count}]++
		if x.consumer == 1 && held[x.offset] && x.count < 2 {
			t.Errorf("offset %d, held by the cut consumer, redelivered with delivery count %d", x.offset, x.count)
		}
	}
	for k, times := range seen {
		if times > 1 {
			t.Errorf("offset %d delivered %d times with delivery count %d", k.off, times, k.count)
		}
	}
}
