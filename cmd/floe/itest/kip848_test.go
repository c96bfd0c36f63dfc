package itest

// KIP-848 consumer groups (issue 19) with real clients: franz-go's
// server-side balancer here, confluent-kafka-go (librdkafka 2.11) with
// group.protocol=consumer in kip848_confluent_test.go. The broker tells
// members to heartbeat every 300 ms so reconciliation takes moments.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kip848Broker starts a broker whose consumer groups heartbeat quickly.
func kip848Broker(t *testing.T) *Broker {
	return start(t, WithFlags("--group-consumer-heartbeat-interval-ms=300", "--group-consumer-session-timeout-ms=10000",
		"--telemetry-push-interval-ms=500"))
}

// produceKeyed writes n records to every partition of topic, value
// "p<partition>-<i>".
func produceKeyed(t *testing.T, addr, topic string, partitions int32, n int) {
	t.Helper()
	producePhase(t, addr, topic, "", partitions, n)
}

// kip848Cluster starts 3 brokers whose consumer groups heartbeat quickly;
// in -short it skips the test instead, saying why.
func kip848Cluster(t *testing.T, why string) []*Broker {
	t.Helper()
	if testing.Short() {
		t.Skip(why)
	}
	return startCluster(t, 3, WithFlags("--group-consumer-heartbeat-interval-ms=300", "--group-consumer-session-timeout-ms=15000"))
}

// everyMemberAssigned says whether group is a Stable consumer group of
// members members, each of which owns partitions.
func everyMemberAssigned(t *testing.T, admin *kgo.Client, group string, members int) bool {
	t.Helper()
	g := describeConsumerGroup(t, admin, group)
	if g.ErrorCode != 0 || len(g.Members) != members || g.State != "Stable" {
		return false
	}
	for _, m := range g.Members {
		if len(m.Assignment.TopicPartitions) == 0 {
			return false
		}
	}
	return true
}

// describeConsumerGroup asks ConsumerGroupDescribe for one group.
func describeConsumerGroup(t *testing.T, cl *kgo.Client, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctxFor(t, opWaitMax), cl)
	if err != nil || len(resp.Groups) != 1 {
		t.Fatalf("ConsumerGroupDescribe: %v %+v", err, resp)
	}
	return resp.Groups[0]
}

// TestKIP848FranzGo: three franz-go members with the server-side balancer
// share six partitions, each record is consumed by exactly one member,
// ConsumerGroupDescribe shows the stable group, and when a member leaves
// the two left own all six.
func TestKIP848FranzGo(t *testing.T) {
	t.Parallel()
	b := kip848Broker(t)
	const topic, group, perPartition = "kip848-franz", "kip848-franz-g", 50
	makeTopic(t, b.KafkaAddr, topic, 6, nil)
	produceKeyed(t, b.KafkaAddr, topic, 6, perPartition)

	var mu sync.Mutex
	seen := map[string]string{} // value → member
	dups := 0
	owned := map[string]map[int32]bool{}
	var members []*kgo.Client
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("m%d", i)
		owned[name] = map[int32]bool{}
		cl := kgoClient(t, b.KafkaAddr,
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
			kgo.Balancers(kgo.CooperativeStickyBalancer()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range a[topic] {
					owned[name][p] = true
				}
			}),
			kgo.OnPartitionsRevoked(func(ctx context.Context, c *kgo.Client, r map[string][]int32) {
				_ = c.CommitMarkedOffsets(ctx)
				mu.Lock()
				defer mu.Unlock()
				for _, p := range r[topic] {
					delete(owned[name], p)
				}
			}),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range r[topic] {
					delete(owned[name], p)
				}
			}),
			kgo.AutoCommitMarks(), kgo.AutoCommitInterval(200*time.Millisecond),
		)
		members = append(members, cl)
		go func() {
			for {
				fs := cl.PollFetches(context.Background())
				if fs.IsClientClosed() {
					return
				}
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					if prev, ok := seen[string(r.Value)]; ok {
						dups++
						t.Logf("%s consumed again by %s (first by %s)", r.Value, name, prev)
					}
					seen[string(r.Value)] = name
					mu.Unlock()
					cl.MarkCommitRecords(r)
				})
			}
		}()
	}
	total := 6 * perPartition
	eventually(t, groupWait, "every record consumed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == total
	})
	eventually(t, groupWait, "a stable group of three owning two partitions each", func() bool {
		g := describeConsumerGroup(t, members[0], group)
		if g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != 3 {
			return false
		}
		for _, m := range g.Members {
			n := 0
			for _, tp := range m.Assignment.TopicPartitions {
				n += len(tp.Partitions)
			}
			if n != 2 || m.MemberEpoch != g.Epoch {
				return false
			}
		}
		return true
	})
	mu.Lock()
	if dups > 0 {
		t.Errorf("%d records consumed twice", dups)
	}
	mu.Unlock()
	// one member leaves: the other two end up owning all six
	members[2].Close()
	eventually(t, groupWait, "two members own all six partitions", func() bool {
		mu.Lock()
		defer mu.Unlock()
		all := map[int32]bool{}
		for _, name := range []string{"m0", "m1"} {
			for p := range owned[name] {
				if all[p] {
					return false
				}
				all[p] = true
			}
		}
		return len(all) == 6
	})
	g := describeConsumerGroup(t, members[0], group)
	if len(g.Members) != 2 {
		t.Fatalf("after a leave: %d members", len(g.Members))
	}
}

// TestKIP848BadInput: the heartbeat errors a client can provoke, each with
// Kafka's code, and a classic group's id refused to a heartbeat that is
// not a join.
func TestKIP848BadInput(t *testing.T) {
	t.Parallel()
	b := kip848Broker(t)
	makeTopic(t, b.KafkaAddr, "kip848-bad", 2, nil)
	cl := kgoClient(t, b.KafkaAddr)
	hb := func(mut func(*kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "kip848-bad-g", "member-1", 30000
		req.SubscribedTopicNames = []string{"kip848-bad"}
		mut(req)
		resp, err := req.RequestWith(ctxFor(t, opWaitMax), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var joined *kmsg.ConsumerGroupHeartbeatResponse
	eventually(t, opWaitMax, "a join", func() bool {
		joined = hb(func(*kmsg.ConsumerGroupHeartbeatRequest) {})
		return joined.ErrorCode == 0
	})
	for _, tc := range []struct {
		name string
		mut  func(*kmsg.ConsumerGroupHeartbeatRequest)
		want *kerr.Error
	}{
		{"fenced epoch", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = joined.MemberEpoch + 7 }, kerr.FencedMemberEpoch},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberEpoch = joined.MemberEpoch
			r.ServerAssignor = kmsg.StringPtr("nope")
		}, kerr.UnsupportedAssignor},
		{"invalid regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberEpoch = joined.MemberEpoch
			r.SubscribedTopicRegex = kmsg.StringPtr("(")
		}, kerr.InvalidRegularExpression},
		{"unknown member", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID, r.MemberEpoch = "ghost", 3 }, kerr.UnknownMemberID},
	} {
		if got := hb(tc.mut).ErrorCode; got != tc.want.Code {
			t.Errorf("%s: got %v, want %v", tc.name, kerr.ErrorForCode(got), tc.want)
		}
	}
	g := describeConsumerGroup(t, cl, "kip848-bad-g")
	if len(g.Members) != 1 || g.Members[0].MemberEpoch != joined.MemberEpoch {
		t.Fatalf("bad input changed the group: %+v", g)
	}
	// a classic group keeps its id
	classic := kgoClient(t, b.KafkaAddr, kgo.ConsumerGroup("kip848-classic"), kgo.ConsumeTopics("kip848-bad"))
	eventually(t, groupWait, "the classic group to form", func() bool {
		classic.PollFetches(ctxFor(t, 200*time.Millisecond))
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{"kip848-classic"}
		resp, err := req.RequestWith(ctxFor(t, opWaitMax), cl)
		return err == nil && len(resp.Groups) == 1 && resp.Groups[0].State == "Stable"
	})
	// (a join, epoch 0, would upgrade it online: kip848_migration_test.go;
	// any other epoch names a consumer group it is not)
	got := hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group, r.MemberEpoch = "kip848-classic", 3 }).ErrorCode
	if got != kerr.GroupIDNotFound.Code {
		t.Fatalf("heartbeat to a classic group: %v", kerr.ErrorForCode(got))
	}
}
