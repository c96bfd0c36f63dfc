package itest

// Helpers of the online migration itests (kip848_migration_test.go, which
// needs cgo, and kip848_kill_test.go).

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// owners tracks who owns each partition, from the clients' callbacks.
type owners struct {
	mu     sync.Mutex
	by     map[int32]string
	double []string
	seen   map[string]bool
}

func (o *owners) assign(name string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if cur, ok := o.by[p]; ok && cur != name {
			o.double = append(o.double, fmt.Sprintf("partition %d given to %s while %s owns it", p, name, cur))
		}
		o.by[p] = name
	}
}

func (o *owners) revoke(name string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if o.by[p] == name {
			delete(o.by, p)
		}
	}
}

func (o *owners) consumed(v string) {
	o.mu.Lock()
	o.seen[v] = true
	o.mu.Unlock()
}

func (o *owners) allSeen(prefix string, partitions int32, n int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < n; i++ {
			if !o.seen[fmt.Sprintf("%sp%d-%d", prefix, p, i)] {
				return false
			}
		}
	}
	return true
}

func producePhase(t *testing.T, addr, topic, prefix string, partitions int32, n int) {
	t.Helper()
	cl := kgoClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%sp%d-%d", prefix, p, i))})
		}
	}
	if err := cl.ProduceSync(ctxFor(t, opWaitMax), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// describeClassic asks DescribeGroups for one group.
func describeClassic(t *testing.T, cl *kgo.Client, group string) kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctxFor(t, opWaitMax), cl)
	if err != nil || len(resp.Groups) != 1 {
		t.Fatalf("DescribeGroups: %v %+v", err, resp)
	}
	return resp.Groups[0]
}

// classicMember starts a franz-go classic consumer (cooperative-sticky) of
// group on topic that reports what it owns to o as name, consumes and
// commits what it reads; opts add to its options.
func classicMember(t *testing.T, addr, group, topic, name string, o *owners, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl := kgoClient(t, addr, append([]kgo.Opt{
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
