package itest

// KIP-848 regex subscriptions under ACLs (issue 19): as in Kafka, the
// broker resolves a member's SubscribedTopicRegex to the matching topics
// its principal may DESCRIBE (node/group's Env.MayDescribe).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKIP848RegexACLFranzGo: a franz-go consumer (group.protocol consumer,
// regex "rx-.*") whose principal may DESCRIBE rx-eu and rx-us but not
// rx-secret is assigned, and consumes, only rx-eu and rx-us; the admin's
// ConsumerGroupDescribe shows no rx-secret partition in its assignment or
// target, and alice's own ConsumerGroupDescribe of the group is refused
// once another member is assigned rx-secret.
func TestKIP848RegexACLFranzGo(t *testing.T) {
	t.Parallel()
	b := securedBroker(t, "--group-consumer-heartbeat-interval-ms=300", "--group-consumer-session-timeout-ms=10000")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adminCl := clientAs(t, b.KafkaAddr, "User:admin")
	admin := kadm.NewClient(adminCl)
	const group, perPartition = "rxg", 5
	topics := []string{"rx-eu", "rx-us", "rx-secret", "other"}
	for _, topic := range topics {
		if _, err := admin.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
			t.Fatalf("admin creates %s: %v", topic, err)
		}
	}
	acls := []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:alice").Topics("rx-eu", "rx-us").Operations(kadm.OpDescribe, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:alice", "User:bob").Groups(group).Operations(kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:bob").Topics("rx-").Operations(kadm.OpDescribe, kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed),
	}
	for _, a := range acls {
		if res, err := admin.CreateACLs(ctx, a); err != nil || firstACLErr(res) != nil {
			t.Fatalf("create ACLs: %v %v", err, firstACLErr(res))
		}
	}
	var recs []*kgo.Record
	for _, topic := range topics {
		for p := int32(0); p < 2; p++ {
			for i := 0; i < perPartition; i++ {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%s/%d/%d", topic, p, i))})
			}
		}
	}
	producer := clientAs(t, b.KafkaAddr, "User:admin", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	alice := clientAs(t, b.KafkaAddr, "User:alice", kgo.ConsumerGroup(group), kgo.ConsumeRegex(), kgo.ConsumeTopics("rx-.*"),
		kgo.ServerSideBalancer(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]int{} // topic → records
	want := 2 * 2 * perPartition
	for total := 0; total < want && ctx.Err() == nil; {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		fs := alice.PollFetches(pctx)
		pcancel()
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !kerr.IsRetriable(err) {
				t.Errorf("alice fetches %s-%d: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { got[r.Topic]++; total++ })
	}
	if got["rx-eu"] != 2*perPartition || got["rx-us"] != 2*perPartition || got["rx-secret"] != 0 || got["other"] != 0 {
		t.Fatalf("alice consumed %v; want %d from each of rx-eu and rx-us, none from rx-secret or other", got, 2*perPartition)
	}
	assigned := func(g kmsg.ConsumerGroupDescribeResponseGroup) []string {
		var ts []string
		for _, m := range g.Members {
			for _, tp := range append(m.Assignment.TopicPartitions, m.TargetAssignment.TopicPartitions...) {
				if !slices.Contains(ts, tp.Topic) {
					ts = append(ts, tp.Topic)
				}
			}
		}
		slices.Sort(ts)
		return ts
	}
	g := describeConsumerGroup(t, adminCl, group)
	if g.ErrorCode != 0 || len(g.Members) != 1 || strings.Join(assigned(g), ",") != "rx-eu,rx-us" {
		t.Fatalf("admin describes %s: %v, %d members, topics %v; want one member with rx-eu and rx-us", group, kerr.ErrorForCode(g.ErrorCode), len(g.Members), assigned(g))
	}

	// bob, who may describe every rx- topic, joins with the same regex:
	// rx-secret is assigned to him alone, and alice, who may not describe
	// it, can no longer describe the group.
	bob := clientAs(t, b.KafkaAddr, "User:bob", kgo.ConsumerGroup(group), kgo.ConsumeRegex(), kgo.ConsumeTopics("rx-.*"),
		kgo.ServerSideBalancer(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	go func() {
		for {
			if fs := bob.PollFetches(context.Background()); fs.IsClientClosed() {
				return
			}
		}
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		g = describeConsumerGroup(t, adminCl, group)
		secretTo := ""
		for _, m := range g.Members {
			for _, tp := range m.TargetAssignment.TopicPartitions {
				if tp.Topic == "rx-secret" {
					secretTo = m.ClientID
				}
			}
		}
		if len(g.Members) == 2 && secretTo != "" {
			if secretTo != "as:User:bob" {
				t.Fatalf("rx-secret is assigned to %s, want bob only", secretTo)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob never got rx-secret: %+v", g.Members)
		}
		time.Sleep(200 * time.Millisecond)
	}
	ga := describeConsumerGroup(t, alice, group)
	if ga.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(ga.Members) != 0 {
		t.Fatalf("alice describes %s: %v with %d members; want TOPIC_AUTHORIZATION_FAILED and none", group, kerr.ErrorForCode(ga.ErrorCode), len(ga.Members))
	}
}
