package itest

// Issue 18's "all of the above across a leader kill -9" for dead letters:
// on 3 brokers, a share group whose consumer rejects some records and
// releases others until the delivery limit, while the partition's leader
// is killed with SIGKILL mid-stream. The dead-letter topic must then hold
// exactly the rejected and over-limit records, each once, with the origin
// headers; every other record is accepted (again, at a higher delivery
// count, where its acknowledgement was lost with the leader; never twice
// at one count); and `floe dlq redrive` puts the
// dead letters back on the source topic. Waits are bounded.

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestShareGroupDeadLetterClusterLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a partition leader of a 3-broker cluster")
	}
	bs := startCluster(t, 3, WithFlags("--share-auto-offset-reset=earliest",
		fmt.Sprintf("--share-record-lock-duration-ms=%d", shareLock.Milliseconds()),
		"--share-heartbeat-interval-ms=1000", "--share-session-timeout-ms=6000"))
	const topic, dlqTopic, n = "jobsk", "dlq.jobsk", 60
	createReplicated(t, bs, topic, 1, 3)
	admin := kgoClient(t, bs[0].KafkaAddr, kgo.SeedBrokers(seeds(bs)...))
	adm := kadm.NewClient(admin)
	lead := agreedLeader(t, bs, topic, 0)
	group, coord := groupNotOn(t, adm, lead)
	t.Logf("partition leader %d, group %s coordinated by %d", lead, group, coord)
	setGroupConfigs(t, admin, group, "share.delivery.count.limit", "2", "errors.deadletterqueue.topic.name", dlqTopic)

	// v<i>: i%5 == 1 is rejected, i%5 == 2 released at every delivery
	// (dead-lettered at the limit), the rest accepted.
	var recs []*kgo.Record
	wantDead := map[string]string{}
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("v%d", i)
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("k" + v), Value: []byte(v),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t" + v)}}})
		switch i % 5 {
		case 1:
			wantDead[v] = "rejected"
		case 2:
			wantDead[v] = "delivery-limit"
		}
	}
	if err := admin.ProduceSync(ctxFor(t, opWaitMax), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	var mu sync.Mutex
	// accepted: the delivery counts each record was accepted at. A record
	// whose acknowledgement was lost with the killed leader comes back
	// after its lock with a higher count and is accepted again; never
	// twice at one count.
	accepted := map[string][]int32{}
	handled := 0
	ctx, cancel := context.WithTimeout(context.Background(), bulkWaitMax)
	defer cancel()
	var wg sync.WaitGroup
	for c := 0; c < 2; c++ {
		sc := newShareClient(t, bs[coord-1].KafkaAddr, group, topic, kgo.SeedBrokers(seeds(bs)...))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				sc.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
					i, _ := strconv.Atoi(strings.TrimPrefix(string(r.Value), "v"))
					mu.Lock()
					handled++
					mu.Unlock()
					switch i % 5 {
					case 1:
						r.Ack(kgo.AckReject)
					case 2:
						r.Ack(kgo.AckRelease)
					default:
						mu.Lock()
						accepted[string(r.Value)] = append(accepted[string(r.Value)], r.DeliveryCount())
						mu.Unlock()
						r.Ack(kgo.AckAccept)
					}
				})
				sc.FlushAcks(ctx)
			}
		}()
	}
	eventually(t, bulkWaitMax, "a third of the records handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return handled >= n/3
	})
	bs[lead-1].Kill()
	t.Logf("partition leader %d killed -9", lead)

	reader := kgoClient(t, bs[coord-1].KafkaAddr, kgo.SeedBrokers(seeds(bs)...), kgo.ConsumeTopics(dlqTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var dead []*kgo.Record
	eventually(t, bulkWaitMax, fmt.Sprintf("%d dead letters", len(wantDead)), func() bool {
		pctx, pcancel := context.WithTimeout(ctx, opWaitMax/10)
		defer pcancel()
		reader.PollFetches(pctx).EachRecord(func(r *kgo.Record) { dead = append(dead, r) })
		return len(dead) >= len(wantDead)
	})
	eventually(t, bulkWaitMax, "every other record accepted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted) == n-len(wantDead)
	})
	cancel()
	wg.Wait()
	bs[lead-1].Restart()

	got := map[string]int{}
	for _, r := range dead {
		h := map[string]string{}
		for _, x := range r.Headers {
			h[x.Key] = string(x.Value)
		}
		v := string(r.Value)
		got[v]++
		if h["trace"] != "t"+v || string(r.Key) != "k"+v {
			t.Errorf("dead letter %s: key %q trace %q", v, r.Key, h["trace"])
		}
		if h["__dlq.errors.reason"] != wantDead[v] || h["__dlq.errors.topic"] != topic || h["__dlq.errors.group.id"] != group {
			t.Errorf("dead letter %s: reason %q topic %q group %q, want %q %s %s", v, h["__dlq.errors.reason"],
				h["__dlq.errors.topic"], h["__dlq.errors.group.id"], wantDead[v], topic, group)
		}
	}
	var extra, dup []string
	for v, c := range got {
		if wantDead[v] == "" {
			extra = append(extra, v)
		}
		if c > 1 {
			dup = append(dup, v)
		}
	}
	sort.Strings(extra)
	sort.Strings(dup)
	if len(extra) > 0 || len(dup) > 0 || len(got) != len(wantDead) {
		t.Errorf("dead letters: %d distinct of %d wanted; not wanted %v; more than once %v", len(got), len(wantDead), extra, dup)
	}
	mu.Lock()
	again := 0
	for v, counts := range accepted {
		at := map[int32]bool{}
		for _, c := range counts {
			if at[c] {
				t.Errorf("%s accepted twice at delivery count %d (%v)", v, c, counts)
			}
			at[c] = true
		}
		again += len(counts) - 1
	}
	mu.Unlock()
	t.Logf("%d records accepted again after the kill (their first acknowledgement lost with the leader)", again)

	// The restarted broker has rejoined: every broker's metadata lists all
	// three before the CLI asks one of them for the group's coordinator.
	for _, b := range bs {
		cl := kgoClient(t, b.KafkaAddr)
		eventually(t, bulkWaitMax, fmt.Sprintf("broker %s lists every broker", b.KafkaAddr), func() bool {
			md, err := kadm.NewClient(cl).BrokerMetadata(ctxFor(t, opWaitMax/10))
			return err == nil && len(md.Brokers) == len(bs)
		})
	}

	// redrive: the dead letters go back to the source topic, once.
	out, err := exec.Command(floeBin, "dlq", "redrive", group, "--brokers", strings.Join(seeds(bs), ","), "--timeout", "60s").CombinedOutput()
	if err != nil {
		t.Fatalf("floe dlq redrive: %v\n%s", err, out)
	}
	t.Logf("floe dlq redrive: %s", strings.TrimSpace(string(out)))
	src := kgoClient(t, bs[coord-1].KafkaAddr, kgo.SeedBrokers(seeds(bs)...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	back := map[string]int{}
	total := 0
	eventually(t, bulkWaitMax, "the redriven records on the source topic", func() bool {
		pctx, pcancel := context.WithTimeout(context.Background(), opWaitMax/10)
		defer pcancel()
		src.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			total++
			if r.Offset >= n {
				back[string(r.Value)]++
			}
		})
		return total >= n+len(wantDead)
	})
	for v := range wantDead {
		if back[v] != 1 {
			t.Errorf("%s redriven %d times, want once", v, back[v])
		}
	}
	if len(back) != len(wantDead) {
		t.Errorf("redriven %d distinct records, want %d", len(back), len(wantDead))
	}
}
