package itest

// Share groups on a 3-broker cluster (issue 18): franz-go's share consumer
// sends ShareFetch to each partition's leader, and the group's state lives
// with its coordinator on another broker (the partition leader forwards,
// node/share_forward.go). Records are delivered to several consumers,
// the partition leader is killed with SIGKILL mid-stream, and every record
// is still delivered: a record comes back only as a redelivery (a higher
// delivery count), never twice with the same count. Waits are bounded.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupNotOn returns a group name whose coordinator is not broker id.
func groupNotOn(t *testing.T, adm *kadm.Client, id int32) (string, int32) {
	t.Helper()
	for i := 0; i < 100; i++ {
		name := fmt.Sprintf("sgc%d", i)
		var co int32 = -1
		waitFor(t, 30*time.Second, "coordinator of "+name, func() bool {
			res := adm.FindGroupCoordinators(ctxFor(t, 5*time.Second), name)
			if res[name].Err != nil {
				return false
			}
			co = res[name].NodeID
			return true
		})
		if co != id {
			return name, co
		}
	}
	t.Fatalf("every group is coordinated by broker %d", id)
	return "", 0
}

func TestShareGroupClusterLeaderFailover(t *testing.T) {
	bs := startCluster(t, 3, WithFlags("--share-auto-offset-reset=earliest",
		fmt.Sprintf("--share-record-lock-duration-ms=%d", shareLock.Milliseconds()),
		"--share-heartbeat-interval-ms=1000", "--share-session-timeout-ms=6000"))
	const n = 400
	createReplicated(t, bs, "qc", 1, 3)
	cl := kgoClient(t, bs[0].KafkaAddr, kgo.SeedBrokers(seeds(bs)...))
	adm := kadm.NewClient(cl)
	lead := agreedLeader(t, bs, "qc", 0)
	group, coord := groupNotOn(t, adm, lead)
	t.Logf("partition leader %d, group %s coordinated by %d", lead, group, coord)
	produceValues(t, bs[coord-1].KafkaAddr, "qc", n)

	var d deliveries
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), bulkWaitMax)
	defer cancel()
	for c := 0; c < 3; c++ {
		sc := newShareClient(t, bs[coord-1].KafkaAddr, group, "qc", kgo.SeedBrokers(seeds(bs)...))
		wg.Add(1)
		go shareConsumer(ctx, sc, c, &d, false, &wg)
	}
	eventually(t, bulkWaitMax, "a third of the records delivered through the leader", func() bool { return d.distinct() >= n/3 })
	bs[lead-1].Kill()
	killedAt := d.distinct()
	eventually(t, bulkWaitMax, "every record delivered after the leader's kill -9", func() bool { return d.distinct() == n })
	cancel()
	wg.Wait()

	type key struct {
		off   int64
		count int32
	}
	seen := map[key]int{}
	per := map[int]int{}
	redelivered := 0
	for _, x := range d.all {
		seen[key{x.offset, x.count}]++
		per[x.consumer]++
		if x.count > 1 {
			redelivered++
		}
	}
	for k, times := range seen {
		if times > 1 {
			t.Errorf("offset %d delivered %d times with delivery count %d", k.off, times, k.count)
		}
	}
	if len(per) < 2 {
		t.Errorf("records went to consumers %v: want at least two sharing the partition", per)
	}
	t.Logf("%d records, %d delivered before the kill; deliveries per consumer %v; %d redeliveries", n, killedAt, per, redelivered)
}
