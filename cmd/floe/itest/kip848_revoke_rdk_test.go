//go:build cgo

package itest

// kip848_revoke_test.go's scenarios with confluent-kafka-go v2 (librdkafka
// 2.11, group.protocol=consumer).

import (
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// rdkCommitMember is a librdkafka consumer-protocol member that commits
// each record synchronously and reports revocations apart from losses.
func rdkCommitMember(t *testing.T, bs []*Broker, group, topic, name string, o *owners) func() {
	t.Helper()
	cfg := kafka.ConfigMap{
		"bootstrap.servers": joinAddrs(bs), "group.id": group, "group.protocol": "consumer",
		"auto.offset.reset": "earliest", "enable.auto.commit": false, "log_level": 3,
	}
	return rdkConsumer(t, cfg, topic, name, o, true, func(c *kafka.Consumer, m *kafka.Message) {
		if _, err := c.CommitMessage(m); err == nil {
			o.ack(m.TopicPartition.Partition, int64(m.TopicPartition.Offset)+1)
		}
	})
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
	bs := kip848Cluster(t, "a 3-broker cluster")
	onlyMovedRevoked(t, bs, rdkCommitMember, "kip848-rev-rdk3", "kip848-rev-rdk3-g")
}

func TestKIP848KillCoordinatorMidRebalanceLibrdkafka(t *testing.T) {
	bs := kip848Cluster(t, "kills a group coordinator of a 3-broker cluster")
	killCoordinatorMidRebalance(t, bs, rdkCommitMember, "kip848-kill-rdk", "kip848-kill-rdk-g")
}
