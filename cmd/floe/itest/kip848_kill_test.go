package itest

// The group coordinator killed with SIGKILL in the middle of an online
// upgrade (issue 19): on 3 brokers, two franz-go classic consumers
// (cooperative-sticky) consume a group and commit; a franz-go KIP-848
// consumer (server-side balancer) joins, and as soon as the group is a
// consumer group (its members still reconciling) the broker that
// coordinates it is killed and restarted. The group recovers on the next
// coordinator: every record is consumed, no partition is ever owned by
// two members at once (their callbacks), and no acknowledged commit is
// lost (the committed offsets after recovery are at least every offset
// a commit was acknowledged for before the kill).

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestKIP848MigrationKillCoordinator(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a group coordinator of a 3-broker cluster (about 30 s)")
	}
	bs := startCluster(t, 3, WithFlags("--group-consumer-heartbeat-interval-ms=300", "--group-consumer-session-timeout-ms=15000",
		"--group-initial-rebalance-delay-ms=0"))
	const topic, group, parts, n = "kip848-kill", "kip848-kill-g", int32(6), 20
	createReplicated(t, bs, topic, parts, 3)
	o := &owners{by: map[int32]string{}, seen: map[string]bool{}}

	member := func(name string, extra ...kgo.Opt) *kgo.Client {
		opts := append([]kgo.Opt{kgo.SeedBrokers(seeds(bs)...), kgo.MetadataMinAge(100 * time.Millisecond)},
			classicOpts(group, topic, name, o, 15*time.Second)...)
		cl := kgoClient(t, bs[0].KafkaAddr, append(append(opts, kgo.DisableAutoCommit()), extra...)...)
		go commitEachPoll(cl, o)
		return cl
	}
	k1, k2 := member("k1"), member("k2")
	defer k1.Close()
	defer k2.Close()
	producePhase(t, bs[0].KafkaAddr, topic, "a", parts, n)
	waitFor(t, 60*time.Second, "the classic members consume phase a", func() bool { return o.allSeen("a", parts, n) })
	co := groupCoordinator(t, bs, group)

	// the KIP-848 member joins; once the group is a consumer group, kill
	// its coordinator
	admin := kgoClient(t, bs[0].KafkaAddr, kgo.SeedBrokers(seeds(bs)...))
	k3 := member("k3", kgo.ServerSideBalancer())
	defer k3.Close()
	var state string
	waitFor(t, 30*time.Second, "the group upgraded", func() bool {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctxFor(t, 5*time.Second), admin)
		if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			return false
		}
		state = fmt.Sprintf("%s, epoch %d, %d members", resp.Groups[0].State, resp.Groups[0].Epoch, len(resp.Groups[0].Members))
		return len(resp.Groups[0].Members) == 3
	})
	before := o.ackedCopy()
	victim := bs[co-1]
	victim.Kill()
	t.Logf("broker %d (coordinator of %s) killed with the group %s; acknowledged commits %v", co, group, state, before)
	time.Sleep(2 * time.Second)
	victim.Restart()

	producePhase(t, bs[(co)%3].KafkaAddr, topic, "b", parts, n)
	waitFor(t, 90*time.Second, "the recovered group consumes phase b", func() bool { return o.allSeen("b", parts, n) })
	waitFor(t, 60*time.Second, "a stable consumer group of three", func() bool {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctxFor(t, 5*time.Second), admin)
		return err == nil && len(resp.Groups) == 1 && resp.Groups[0].ErrorCode == 0 &&
			resp.Groups[0].State == "Stable" && len(resp.Groups[0].Members) == 3
	})
	// no acknowledged commit was lost
	now := committedOffsets(t, bs, group)
	for p, off := range before {
		if now[p] < off {
			t.Errorf("partition %d: committed %d after recovery, below the %d acknowledged before the kill", p, now[p], off)
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, d := range o.double {
		t.Error(d)
	}
	t.Logf("committed after recovery: %v", now)
}
