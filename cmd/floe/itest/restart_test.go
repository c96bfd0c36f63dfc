package itest

// Issue 13, bug 8: what clients see while brokers restart. Three real
// brokers stop and come back one by one; a franz-go producer that knows
// only the first to return writes to topics that exist all along.

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createAssigned creates a topic with the given replica assignment (one
// list of broker ids per partition) through addr, and waits until every
// partition has a leader.
func createAssigned(t *testing.T, addr, topic string, assignment [][]int32) {
	t.Helper()
	cl := kgoClient(t, addr)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, replicas := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxFor(t, opWaitMax), cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	waitLeaders(t, kadm.NewClient(cl), topic, int32(len(assignment)))
}

// readyz returns a broker's /readyz status and body (0 if it did not
// answer).
func readyz(b *Broker) (int, string) {
	hc := &http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get("http://" + b.AdminAddr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// metadataReads counts the Metadata responses a client read.
type metadataReads struct{ n atomic.Int64 }

func (m *metadataReads) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 3 && err == nil {
		m.n.Add(1)
	}
}

// Before the fix a restarting broker answered a topic it had not yet
// learned UNKNOWN_TOPIC_OR_PARTITION, and franz-go failed the records
// after four such answers; and its /readyz said 200 while partitions it
// holds had no leader. Now every record is written once the cluster is
// back, and /readyz waits for every local replica's leader.
func TestProduceThroughClusterRestart(t *testing.T) {
	bs := startCluster(t, 3)
	b1, b2, b3 := bs[0], bs[1], bs[2]
	createAssigned(t, b1.KafkaAddr, "before", [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}})
	createAssigned(t, b1.KafkaAddr, "pair", [][]int32{{1, 2}}) // can elect only with both 1 and 2
	// Broker 3 misses the creation of "while-down".
	b3.Stop()
	createAssigned(t, b1.KafkaAddr, "while-down", [][]int32{{1, 2, 3}, {2, 3, 1}})
	b1.Stop()
	b2.Stop()

	// Broker 3 comes back alone: no controller quorum, so its metadata
	// stays as it was (without "while-down") for as long as it is alone.
	b3.Restart()
	var reads metadataReads
	cl := kgoClient(t, b3.KafkaAddr, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.WithHooks(&reads),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	const perTopic = 100
	var (
		mu      sync.Mutex
		failed  []string
		acked   = map[string]bool{}
		pending sync.WaitGroup
	)
	for _, topic := range []string{"while-down", "before"} {
		for i := 0; i < perTopic; i++ {
			v := fmt.Sprintf("%s-%d", topic, i)
			pending.Add(1)
			cl.Produce(ctxFor(t, bulkWaitMax), &kgo.Record{Topic: topic, Key: []byte(v), Value: []byte(v)}, func(r *kgo.Record, err error) {
				mu.Lock()
				if err != nil {
					failed = append(failed, fmt.Sprintf("%s: %v", v, err))
				} else {
					acked[v] = true
				}
				mu.Unlock()
				pending.Done()
			})
		}
	}
	// Let broker 3 answer more Metadata requests than franz-go's
	// unknown-topic limit (4): with the old answer the "while-down"
	// records would have failed by now.
	waitFor(t, opWaitMax, "franz-go asking broker 3 for metadata 8 times", func() bool { return reads.n.Load() >= 8 })
	mu.Lock()
	early := append([]string(nil), failed...)
	mu.Unlock()
	if len(early) > 0 {
		t.Fatalf("%d records failed while broker 3 was alone, first %s", len(early), early[0])
	}
	if code, body := readyz(b3); code != http.StatusServiceUnavailable {
		t.Fatalf("broker 3 alone (no controller quorum): /readyz %d %q, want 503", code, body)
	}

	// Broker 1 returns: a controller quorum (1 and 3), and leaders for
	// every partition but pair-0, whose other replica (2) is still down.
	b1.Restart()
	done := make(chan struct{})
	go func() { pending.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(bulkWaitMax):
		t.Fatalf("records still pending %v after broker 1 returned", bulkWaitMax)
	}
	if len(failed) > 0 {
		t.Fatalf("%d of %d records failed, first %s", len(failed), 2*perTopic, failed[0])
	}
	b3.WaitReady()
	// Broker 1 holds pair-0, which has no leader: it must not say ready.
	var code int
	var body string
	waitFor(t, opWaitMax, "broker 1's /readyz to answer with a reason about pair-0, or 200", func() bool {
		code, body = readyz(b1)
		return code == http.StatusOK || (code == http.StatusServiceUnavailable && strings.Contains(body, "pair-0"))
	})
	if code != http.StatusServiceUnavailable {
		t.Fatalf("broker 1: /readyz %d %q while its replica of pair-0 has no leader", code, body)
	}
	t.Logf("broker 1 while pair-0 has no leader: /readyz %d %q", code, body)

	// Broker 2 returns: pair-0 elects, everyone is ready, and every
	// acknowledged record is there exactly once.
	b2.Restart()
	for _, b := range bs {
		b.WaitReady()
	}
	for _, topic := range []string{"while-down", "before"} {
		seen := map[string]int{}
		for _, recs := range readAll(t, b3.KafkaAddr, topic) {
			for _, r := range recs {
				seen[string(r.Value)]++
			}
		}
		for i := 0; i < perTopic; i++ {
			if v := fmt.Sprintf("%s-%d", topic, i); seen[v] != 1 {
				t.Errorf("%s: acknowledged record %s read %d times, want once", topic, v, seen[v])
			}
		}
	}
}
