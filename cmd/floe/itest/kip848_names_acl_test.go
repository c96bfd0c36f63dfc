package itest

// KIP-848 subscriptions by name under ACLs (issue 19): as in Kafka 4.0
// (KAFKA-18813), a ConsumerGroupHeartbeat naming a topic the principal may
// not DESCRIBE fails with TOPIC_AUTHORIZATION_FAILED and changes nothing.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKIP848TopicNamesACLFranzGo: against a real `floe serve` with ACLs,
// alice (READ on group nameg, DESCRIBE on topic na only) heartbeats as a
// KIP-848 member through a franz-go client: subscribing [na nb] is refused
// with TOPIC_AUTHORIZATION_FAILED naming nb and adds no member; subscribing
// [na] joins and is assigned na's partitions.
func TestKIP848TopicNamesACLFranzGo(t *testing.T) {
	t.Parallel()
	b := securedBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adminCl := clientAs(t, b.KafkaAddr, "User:admin")
	admin := kadm.NewClient(adminCl)
	const group = "nameg"
	for _, topic := range []string{"na", "nb"} {
		if _, err := admin.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
			t.Fatalf("admin creates %s: %v", topic, err)
		}
	}
	acls := []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:alice").Topics("na").Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:alice").Groups(group).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
	}
	for _, a := range acls {
		if res, err := admin.CreateACLs(ctx, a); err != nil || firstACLErr(res) != nil {
			t.Fatalf("create ACLs: %v %v", err, firstACLErr(res))
		}
	}
	alice := clientAs(t, b.KafkaAddr, "User:alice")
	heartbeat := func(topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, group, "alice-m", 0
		req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 30000, topics
		for {
			resp, err := req.RequestWith(ctx, alice)
			if err == nil && !kerr.IsRetriable(kerr.ErrorForCode(resp.ErrorCode)) {
				return resp
			}
			if ctx.Err() != nil {
				t.Fatalf("heartbeat %v: %v %v", topics, err, ctx.Err())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	resp := heartbeat("na", "nb")
	if resp.ErrorCode != kerr.TopicAuthorizationFailed.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "nb") {
		t.Fatalf("subscribing [na nb]: %v (%v), want TOPIC_AUTHORIZATION_FAILED naming nb", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	if g := describeConsumerGroup(t, adminCl, group); len(g.Members) != 0 {
		t.Fatalf("after the refusal %s has members %+v, want none", group, g.Members)
	}
	resp = heartbeat("na")
	if resp.ErrorCode != 0 || resp.MemberEpoch < 1 {
		t.Fatalf("subscribing [na]: %v, epoch %d", kerr.ErrorForCode(resp.ErrorCode), resp.MemberEpoch)
	}
	g := describeConsumerGroup(t, adminCl, group)
	if g.ErrorCode != 0 || len(g.Members) != 1 || len(g.Members[0].TargetAssignment.TopicPartitions) != 1 ||
		g.Members[0].TargetAssignment.TopicPartitions[0].Topic != "na" {
		t.Fatalf("admin describes %s: %v, members %+v; want alice-m alone with target na", group, kerr.ErrorForCode(g.ErrorCode), g.Members)
	}
}
