//go:build cgo

package itest

// kip848_revoke_test.go's scenarios with confluent-kafka-go v2 (librdkafka
// 2.11, group.protocol=consumer).

import (
	"sync"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// rdkCommitMember is a librdkafka consumer-protocol member that commits
// each record synchronously and reports revocations apart from losses.
func rdkCommitMember(t *testing.T, bs []*Broker, group, topic, name string, o *owners) func() {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers": joinAddrs(bs), "group.id": group, "group.protocol": "consumer",
		"auto.offset.reset": "earliest", "enable.auto.commit": false, "log_level": 3,
	})
	if err != nil {
		t.Fatalf("new consumer: %v", err)
	}
	ps := func(tps []kafka.TopicPartition) []int32 {
		var out []int32
		for _, tp := range tps {
			out = append(out, tp.Partition)
		}
		return out
	}
	rebalance := func(c *kafka.Consumer, ev kafka.Event) error {
		switch e := ev.(type) {
		case kafka.AssignedPartitions:
			o.assign(name, ps(e.Partitions))
		case kafka.RevokedPartitions:
			if c.AssignmentLost() {
				o.lose(name, ps(e.Partitions))
			} else {
				o.revoke(name, ps(e.Partitions))
			}
		}
		return nil
	}
	if err := c.Subscribe(topic, rebalance); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			m, ok := c.Poll(100).(*kafka.Message)
			if !ok {
				continue
			}
			o.consumed(string(m.Value))
			if _, err := c.CommitMessage(m); err == nil {
				o.ack(m.TopicPartition.Partition, int64(m.TopicPartition.Offset)+1)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			wg.Wait()
			c.Close()
		})
	}
}

func joinAddrs(bs []*Broker) string {
	s := ""
	for i, b := range bs {
		if i > 0 {
			s += ","
		}
		s += b.KafkaAddr
	}
	return s
}

func TestKIP848OnlyMovedRevokedLibrdkafka(t *testing.T) {
	t.Parallel()
	onlyMovedRevoked(t, []*Broker{kip848Broker(t)}, rdkCommitMember, "kip848-rev-rdk", "kip848-rev-rdk-g")
}

func TestKIP848OnlyMovedRevokedLibrdkafkaCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-broker cluster")
	}
	bs := startCluster(t, 3, WithFlags("--group-consumer-heartbeat-interval-ms=300", "--group-consumer-session-timeout-ms=15000"))
	onlyMovedRevoked(t, bs, rdkCommitMember, "kip848-rev-rdk3", "kip848-rev-rdk3-g")
}

func TestKIP848KillCoordinatorMidRebalanceLibrdkafka(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a group coordinator of a 3-broker cluster")
	}
	bs := startCluster(t, 3, WithFlags("--group-consumer-heartbeat-interval-ms=300", "--group-consumer-session-timeout-ms=15000"))
	killCoordinatorMidRebalance(t, bs, rdkCommitMember, "kip848-kill-rdk", "kip848-kill-rdk-g")
}
