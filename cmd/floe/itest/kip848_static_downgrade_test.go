//go:build cgo

package itest

// The online downgrade by static replacement (issue 19,
// node/group/migrate.go, Kafka's validateOnlineDowngradeWithReplacedMemberId)
// with real clients: a franz-go classic consumer and a confluent-kafka-go
// (librdkafka 2.11) group.protocol=consumer consumer with
// group.instance.id consume one group (upgraded to a consumer group);
// the librdkafka consumer closes (a static leave, epoch -2) and a franz-go
// classic consumer with the same instance id takes its place, so the last
// consumer-protocol member is replaced by a classic one: the group is
// classic again, with the new member under the instance id, and every
// record of each phase is consumed; no partition is ever owned by two
// members at once (as their callbacks report it).

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestKIP848StaticReplacementDowngrade(t *testing.T) {
	t.Parallel()
	// A consumer-protocol session of 60 s: the static member that leaves
	// stays in the group for longer than the test waits for the
	// downgrade, so only its replacement can make the group classic.
	b := start(t, WithFlags("--group-consumer-heartbeat-interval-ms=300", "--group-consumer-session-timeout-ms=60000",
		"--group-initial-rebalance-delay-ms=0"))
	const topic, group, parts, n, instance = "kip848-static", "kip848-static-g", int32(6), 20, "inst-1"
	makeTopic(t, b.KafkaAddr, topic, parts, nil)
	o := &owners{by: map[int32]string{}, seen: map[string]bool{}}

	classic := func(name string, opts ...kgo.Opt) *kgo.Client {
		cl := kgoClient(t, b.KafkaAddr, append([]kgo.Opt{
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.Balancers(kgo.CooperativeStickyBalancer()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.SessionTimeout(10 * time.Second), kgo.HeartbeatInterval(300 * time.Millisecond),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) { o.assign(name, a[topic]) }),
			kgo.OnPartitionsRevoked(func(ctx context.Context, c *kgo.Client, r map[string][]int32) {
				_ = c.CommitMarkedOffsets(ctx)
				o.revoke(name, r[topic])
			}),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { o.revoke(name, r[topic]) }),
			kgo.AutoCommitMarks(), kgo.AutoCommitInterval(200 * time.Millisecond),
		}, opts...)...)
		go func() {
			for {
				fs := cl.PollFetches(context.Background())
				if fs.IsClientClosed() {
					return
				}
				fs.EachRecord(func(r *kgo.Record) {
					o.consumed(string(r.Value))
					cl.MarkCommitRecords(r)
				})
			}
		}()
		return cl
	}
	k1 := classic("k1")
	defer k1.Close()
	producePhase(t, b.KafkaAddr, topic, "a", parts, n)
	eventually(t, 60*time.Second, "the classic member consumes phase a", func() bool { return o.allSeen("a", parts, n) })
	admin := kgoClient(t, b.KafkaAddr)

	// the static librdkafka consumer-protocol member joins: upgrade
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers": b.KafkaAddr, "group.id": group, "group.protocol": "consumer",
		"group.instance.id": instance,
		"auto.offset.reset": "earliest", "enable.auto.commit": true, "auto.commit.interval.ms": 200, "log_level": 3,
	})
	if err != nil {
		t.Fatalf("new consumer: %v", err)
	}
	rebalance := func(_ *kafka.Consumer, ev kafka.Event) error {
		var tps []kafka.TopicPartition
		switch e := ev.(type) {
		case kafka.AssignedPartitions:
			tps = e.Partitions
		case kafka.RevokedPartitions:
			tps = e.Partitions
		}
		var ps []int32
		for _, tp := range tps {
			ps = append(ps, tp.Partition)
		}
		if _, ok := ev.(kafka.AssignedPartitions); ok {
			o.assign("rdk", ps)
		} else {
			o.revoke("rdk", ps)
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
			if m, ok := c.Poll(100).(*kafka.Message); ok {
				o.consumed(string(m.Value))
			}
		}
	}()
	closed := false
	closeRdk := func() {
		if closed {
			return
		}
		closed = true
		close(stop)
		wg.Wait()
		c.Close()
	}
	defer closeRdk()
	eventually(t, 60*time.Second, "a consumer group of two, the static member owning partitions", func() bool {
		g := describeConsumerGroup(t, admin, group)
		if g.ErrorCode != 0 || len(g.Members) != 2 || g.State != "Stable" {
			return false
		}
		for _, m := range g.Members {
			if len(m.Assignment.TopicPartitions) == 0 {
				return false
			}
		}
		return true
	})
	producePhase(t, b.KafkaAddr, topic, "b", parts, n)
	eventually(t, 60*time.Second, "the mixed group consumes phase b", func() bool { return o.allSeen("b", parts, n) })

	// the static member's process goes; a classic one takes its instance id
	closeRdk()
	// librdkafka leaves as a static member (epoch -2): the coordinator
	// keeps it, and its assignment, for its session, so the group is
	// still a consumer group when the classic member comes
	g := describeConsumerGroup(t, admin, group)
	held := false
	for _, m := range g.Members {
		held = held || (m.InstanceID != nil && *m.InstanceID == instance && m.MemberType == 1)
	}
	if g.ErrorCode != 0 || !held {
		t.Fatalf("after the static member closed: error %d, members %+v; want the consumer group keeping it", g.ErrorCode, g.Members)
	}
	k2 := classic("k2", kgo.InstanceID(instance))
	defer k2.Close()
	eventually(t, 30*time.Second, "the group is classic again, with the new member under the instance id", func() bool {
		g := describeClassic(t, admin, group)
		if g.ErrorCode != 0 || g.State != "Stable" || g.ProtocolType != "consumer" || len(g.Members) != 2 {
			return false
		}
		for _, m := range g.Members {
			if m.InstanceID != nil && *m.InstanceID == instance {
				return true
			}
		}
		return false
	})
	producePhase(t, b.KafkaAddr, topic, "c", parts, n)
	eventually(t, 60*time.Second, "the classic group consumes phase c", func() bool { return o.allSeen("c", parts, n) })
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, d := range o.double {
		t.Error(d)
	}
}
