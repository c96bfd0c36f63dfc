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
	// revoked logs every revocation (not losses) since the last
	// takeRevoked; acked is the highest offset per partition a commit
	// was acknowledged for.
	revoked []revocation
	acked   map[int32]int64
}

// revocation is one partition a member gave back.
type revocation struct {
	member    string
	partition int32
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
		o.revoked = append(o.revoked, revocation{name, p})
	}
	o.dropLocked(name, ps)
}

// lose drops what a member lost (session expiry, fencing) without logging
// it as a revocation.
func (o *owners) lose(name string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.dropLocked(name, ps)
}

func (o *owners) dropLocked(name string, ps []int32) {
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
	cl := kgoClient(t, addr, append(append(classicOpts(group, topic, name, o, 10*time.Second),
		kgo.AutoCommitMarks(), kgo.AutoCommitInterval(200*time.Millisecond)), opts...)...)
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

// classicOpts are the options of a franz-go classic member (cooperative-
// sticky, from the start of topic) of group with this session timeout,
// which reports what it owns to o as name and, when a partition is revoked,
// commits what it marked first.
func classicOpts(group, topic, name string, o *owners, session time.Duration) []kgo.Opt {
	return append([]kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(session), kgo.HeartbeatInterval(300 * time.Millisecond),
	}, ownerHooks(topic, name, o, true)...)
}

// ownerHooks report a franz-go member's partitions of topic to o as name:
// assigned, revoked (with commitMarked, after committing what it marked)
// and lost.
func ownerHooks(topic, name string, o *owners, commitMarked bool) []kgo.Opt {
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) { o.assign(name, a[topic]) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, c *kgo.Client, r map[string][]int32) {
			if commitMarked {
				_ = c.CommitMarkedOffsets(ctx)
			}
			o.revoke(name, r[topic])
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { o.lose(name, r[topic]) }),
	}
}

// commitEachPoll consumes with cl until it is closed: it reports each
// record to o, commits each poll's records synchronously, and notes each
// commit acknowledged with o.ack. Run it in its own goroutine.
func commitEachPoll(cl *kgo.Client, o *owners) {
	for {
		fs := cl.PollFetches(context.Background())
		if fs.IsClientClosed() {
			return
		}
		recs := fs.Records()
		for _, r := range recs {
			o.consumed(string(r.Value))
		}
		if len(recs) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := cl.CommitRecords(ctx, recs...)
		cancel()
		if err == nil {
			for _, r := range recs {
				o.ack(r.Partition, r.Offset+1)
			}
		}
	}
}

// takeRevoked returns the revocations logged since the last call.
func (o *owners) takeRevoked() []revocation {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.revoked
	o.revoked = nil
	return out
}

// snapshot copies who owns each partition.
func (o *owners) snapshot() map[int32]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[int32]string{}
	for p, m := range o.by {
		out[p] = m
	}
	return out
}

// ack notes that a commit of offset next for partition p was acknowledged.
func (o *owners) ack(p int32, next int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.acked == nil {
		o.acked = map[int32]int64{}
	}
	if next > o.acked[p] {
		o.acked[p] = next
	}
}

// ackedCopy copies the acknowledged commits.
func (o *owners) ackedCopy() map[int32]int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[int32]int64{}
	for p, off := range o.acked {
		out[p] = off
	}
	return out
}
