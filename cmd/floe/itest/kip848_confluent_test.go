//go:build cgo

package itest

// confluent-kafka-go v2 (librdkafka 2.11, bundled as a static library, so
// it needs cgo and a C compiler, nothing else) with
// group.protocol=consumer: issue 19's "done when". Two consumers share four
// partitions through ConsumerGroupHeartbeat and together read every
// record, and commit offsets with their member epochs.

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

func TestKIP848ConfluentKafkaGo(t *testing.T) {
	t.Parallel()
	b := kip848Broker(t)
	const topic, group, perPartition = "kip848-cfk", "kip848-cfk-g", 25
	makeTopic(t, b.KafkaAddr, topic, 4, nil)
	produceKeyed(t, b.KafkaAddr, topic, 4, perPartition)

	var mu sync.Mutex
	seen := map[string]bool{}
	byMember := map[string]int{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := 0; i < 2; i++ {
		name := fmt.Sprintf("c%d", i)
		c, err := kafka.NewConsumer(&kafka.ConfigMap{
			"bootstrap.servers":  b.KafkaAddr,
			"group.id":           group,
			"group.protocol":     "consumer",
			"auto.offset.reset":  "earliest",
			"enable.auto.commit": false,
			"log_level":          3,
		})
		if err != nil {
			t.Fatalf("new consumer: %v", err)
		}
		if err := c.Subscribe(topic, nil); err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ev := c.Poll(100)
				switch e := ev.(type) {
				case *kafka.Message:
					mu.Lock()
					seen[string(e.Value)] = true
					byMember[name]++
					mu.Unlock()
					if _, err := c.CommitMessage(e); err != nil {
						t.Logf("%s commit: %v", name, err)
					}
				case kafka.Error:
					t.Logf("%s: %v", name, e)
				}
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	eventually(t, 90*time.Second, "confluent-kafka-go consumers read every record", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 4*perPartition
	})
	g := describeConsumerGroup(t, kgoClient(t, b.KafkaAddr), group)
	if g.ErrorCode != 0 || len(g.Members) == 0 {
		t.Fatalf("ConsumerGroupDescribe after consuming: %+v", g)
	}
	for _, m := range g.Members {
		if m.MemberEpoch <= 0 {
			t.Errorf("member %s at epoch %d", m.MemberID, m.MemberEpoch)
		}
	}
	// librdkafka pushes its metrics (KIP-714) to the subscription the
	// broker handed out; the broker exports them.
	var pushes string
	eventually(t, 30*time.Second, "librdkafka's telemetry pushes reach /metrics", func() bool {
		resp, err := http.Get("http://" + b.AdminAddr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "floe_client_telemetry_pushes_total ") && !strings.HasSuffix(line, " 0") {
				pushes = line
				return strings.Contains(string(body), "floe_client_telemetry{metric=\"org.apache.kafka.consumer.")
			}
		}
		return false
	})
	t.Logf("%s", pushes)
	mu.Lock()
	t.Logf("records per member: %v; group epoch %d, %d members", byMember, g.Epoch, len(g.Members))
	mu.Unlock()
}
