//go:build cgo

package itest

// Online migration of a group with members between the classic and the
// consumer protocol (issue 19, node/group/migrate.go) with real clients:
// two franz-go classic consumers (cooperative-sticky) consume a group; a
// confluent-kafka-go consumer (librdkafka 2.11) with group.protocol=consumer
// joins it (upgrade), one classic member leaves, then the librdkafka
// consumer closes (downgrade) and the last classic member takes
// everything. Every record produced in each phase is consumed, and no
// partition is ever owned by two members at once (as their assignment
// callbacks report it).

import (
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestKIP848MigrationMixedClients(t *testing.T) {
	t.Parallel()
	b := start(t, WithFlags("--group-consumer-heartbeat-interval-ms=300", "--group-consumer-session-timeout-ms=10000",
		"--group-initial-rebalance-delay-ms=0"))
	const topic, group, parts, n = "kip848-mig", "kip848-mig-g", int32(6), 20
	makeTopic(t, b.KafkaAddr, topic, parts, nil)
	o := &owners{by: map[int32]string{}, seen: map[string]bool{}}

	classic := func(name string) *kgo.Client { return classicMember(t, b.KafkaAddr, group, topic, name, o) }
	k1, k2 := classic("k1"), classic("k2")
	producePhase(t, b.KafkaAddr, topic, "a", parts, n)
	eventually(t, 60*time.Second, "the classic members consume phase a", func() bool { return o.allSeen("a", parts, n) })
	admin := kgoClient(t, b.KafkaAddr)
	// Every record of phase a can be consumed by the first member while
	// the second one's join still rebalances the group: wait for it.
	var state string
	var members int
	eventually(t, 60*time.Second, "the classic group stable with 2 members before the upgrade", func() bool {
		g := describeClassic(t, admin, group)
		state, members = g.State, len(g.Members)
		return state == "Stable" && members == 2
	})
	t.Logf("classic group before the upgrade: %s with %d members", state, members)

	// the librdkafka consumer-protocol member joins: the group is upgraded
	closeRdk := rdkMember(t, kafka.ConfigMap{"bootstrap.servers": b.KafkaAddr, "group.id": group}, topic, "rdk", o)
	eventually(t, 60*time.Second, "the group is a consumer group of three, each owning partitions", func() bool {
		return everyMemberAssigned(t, admin, group, 3)
	})
	producePhase(t, b.KafkaAddr, topic, "b", parts, n)
	eventually(t, 60*time.Second, "the mixed group consumes phase b", func() bool { return o.allSeen("b", parts, n) })

	// a classic member leaves: the other two share the six partitions
	k2.Close()
	producePhase(t, b.KafkaAddr, topic, "c", parts, n)
	eventually(t, 60*time.Second, "the two left consume phase c", func() bool { return o.allSeen("c", parts, n) })

	// the consumer-protocol member leaves: the group is classic again
	closeRdk()
	eventually(t, 60*time.Second, "the group is classic again, its one member stable", func() bool {
		g := describeClassic(t, admin, group)
		return g.ErrorCode == 0 && g.State == "Stable" && len(g.Members) == 1
	})
	producePhase(t, b.KafkaAddr, topic, "d", parts, n)
	eventually(t, 60*time.Second, "the last classic member consumes phase d", func() bool { return o.allSeen("d", parts, n) })
	k1.Close()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, d := range o.double {
		t.Error(d)
	}
}

// rdkMember starts a confluent-kafka-go consumer with group.protocol=consumer
// (cfg adds to its settings) on topic that reports what it owns to o as
// name; the returned func closes it (once).
func rdkMember(t *testing.T, cfg kafka.ConfigMap, topic, name string, o *owners) func() {
	t.Helper()
	for k, v := range (kafka.ConfigMap{"group.protocol": "consumer", "auto.offset.reset": "earliest",
		"enable.auto.commit": true, "auto.commit.interval.ms": 200, "log_level": 3}) {
		cfg[k] = v
	}
	return rdkConsumer(t, cfg, topic, name, o, false, nil)
}

// rdkConsumer starts a confluent-kafka-go consumer with cfg, subscribed to
// topic, that reports what it owns to o as name (with lostApart, a lost
// assignment as lost, else as revoked) and each message it polls as
// consumed, then hands it to onMessage (if any). The returned func closes
// it (once).
func rdkConsumer(t *testing.T, cfg kafka.ConfigMap, topic, name string, o *owners, lostApart bool,
	onMessage func(*kafka.Consumer, *kafka.Message)) func() {
	t.Helper()
	c, err := kafka.NewConsumer(&cfg)
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
			if lostApart && c.AssignmentLost() {
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
			if onMessage != nil {
				onMessage(c, m)
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
