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
		return classicMember(t, b.KafkaAddr, group, topic, name, o, opts...)
	}
	k1 := classic("k1")
	defer k1.Close()
	producePhase(t, b.KafkaAddr, topic, "a", parts, n)
	eventually(t, 60*time.Second, "the classic member consumes phase a", func() bool { return o.allSeen("a", parts, n) })
	admin := kgoClient(t, b.KafkaAddr)

	// the static librdkafka consumer-protocol member joins: upgrade
	closeRdk := rdkMember(t, kafka.ConfigMap{"bootstrap.servers": b.KafkaAddr, "group.id": group, "group.instance.id": instance},
		topic, "rdk", o)
	defer closeRdk()
	eventually(t, 60*time.Second, "a consumer group of two, the static member owning partitions", func() bool {
		return everyMemberAssigned(t, admin, group, 2)
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
