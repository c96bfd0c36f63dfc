package itest

// Issue 19's KIP-848 rebalance checks with real clients: a member joins
// and another leaves, and only the partitions that move are revoked; the
// group coordinator is killed with SIGKILL while a member joins, and no
// acknowledged commit is lost. franz-go here, librdkafka 2.11 in
// kip848_revoke_rdk_test.go; one broker and a 3-broker cluster.

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startMember starts a consumer-protocol member named name of group on
// topic, reporting to o (assignments, revocations, losses, records and
// acknowledged commits); the returned func closes it (once).
type startMember func(t *testing.T, bs []*Broker, group, topic, name string, o *owners) func()

// franzMember is a franz-go member with the server-side balancer that
// commits what each poll returned, synchronously.
func franzMember(t *testing.T, bs []*Broker, group, topic, name string, o *owners) func() {
	t.Helper()
	cl := kgoClient(t, bs[0].KafkaAddr, append([]kgo.Opt{kgo.SeedBrokers(seeds(bs)...), kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
	}, ownerHooks(topic, name, o, false)...)...)
	go commitEachPoll(cl, o)
	closed := false
	return func() {
		if !closed {
			closed = true
			cl.Close()
		}
	}
}

// evenOwners waits until every one of parts partitions is owned by one of
// members, each owning parts/len(members).
func evenOwners(t *testing.T, o *owners, parts int32, members ...string) map[int32]string {
	t.Helper()
	var by map[int32]string
	waitFor(t, 90*time.Second, fmt.Sprintf("%v own %d partitions evenly", members, parts), func() bool {
		by = o.snapshot()
		if len(by) != int(parts) {
			return false
		}
		count := map[string]int{}
		for _, m := range by {
			count[m]++
		}
		for _, m := range members {
			if count[m] != int(parts)/len(members) {
				return false
			}
		}
		return len(count) == len(members)
	})
	return by
}

// movedAway lists, sorted, the partitions whose owner in before is not
// their owner in after.
func movedAway(before, after map[int32]string) []string {
	var out []string
	for p, m := range before {
		if after[p] != m {
			out = append(out, fmt.Sprintf("%s:%d", m, p))
		}
	}
	sort.Strings(out)
	return out
}

func revokedList(rs []revocation, except string) []string {
	var out []string
	for _, r := range rs {
		if r.member != except {
			out = append(out, fmt.Sprintf("%s:%d", r.member, r.partition))
		}
	}
	sort.Strings(out)
	return out
}

// onlyMovedRevoked: two members share six partitions; a third joins and
// only the partitions it takes are revoked from their owners; then the
// first leaves and neither of the others gives anything up.
func onlyMovedRevoked(t *testing.T, bs []*Broker, start startMember, topic, group string) {
	const parts, n = int32(6), 20
	createReplicated(t, bs, topic, parts, int16(len(bs)))
	o := &owners{by: map[int32]string{}, seen: map[string]bool{}}
	m0 := start(t, bs, group, topic, "m0", o)
	defer m0()
	m1 := start(t, bs, group, topic, "m1", o)
	defer m1()
	producePhase(t, bs[0].KafkaAddr, topic, "a", parts, n)
	waitFor(t, 90*time.Second, "two members consume phase a", func() bool { return o.allSeen("a", parts, n) })
	before := evenOwners(t, o, parts, "m0", "m1")
	o.takeRevoked()

	m2 := start(t, bs, group, topic, "m2", o)
	defer m2()
	producePhase(t, bs[0].KafkaAddr, topic, "b", parts, n)
	waitFor(t, 90*time.Second, "three members consume phase b", func() bool { return o.allSeen("b", parts, n) })
	after := evenOwners(t, o, parts, "m0", "m1", "m2")
	moved, revoked := movedAway(before, after), revokedList(o.takeRevoked(), "")
	if fmt.Sprint(moved) != fmt.Sprint(revoked) {
		t.Errorf("m2 joined: revoked %v, but only %v moved (before %v, after %v)", revoked, moved, before, after)
	}
	for p, m := range after {
		if m != "m2" && before[p] != m {
			t.Errorf("m2 joined: partition %d moved from %s to %s, not to the new member", p, before[p], m)
		}
	}
	t.Logf("m2 joined: moved and revoked %v", moved)

	m0()
	producePhase(t, bs[0].KafkaAddr, topic, "c", parts, n)
	waitFor(t, 90*time.Second, "two members consume phase c", func() bool { return o.allSeen("c", parts, n) })
	evenOwners(t, o, parts, "m1", "m2")
	if r := revokedList(o.takeRevoked(), "m0"); len(r) > 0 {
		t.Errorf("m0 left: the members that stayed gave up %v", r)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, d := range o.double {
		t.Error(d)
	}
}

// groupCoordinator asks which broker coordinates group.
func groupCoordinator(t *testing.T, bs []*Broker, group string) int32 {
	t.Helper()
	admin := kgoClient(t, bs[0].KafkaAddr, kgo.SeedBrokers(seeds(bs)...))
	var node int32
	waitFor(t, 30*time.Second, "the coordinator of "+group, func() bool {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKeys = []string{group}
		resp, err := req.RequestWith(ctxFor(t, 5*time.Second), admin)
		if err != nil || len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
			return false
		}
		node = resp.Coordinators[0].NodeID
		return node >= 1 && int(node) <= len(bs)
	})
	return node
}

// committedOffsets asks OffsetFetch for group's committed offsets.
func committedOffsets(t *testing.T, bs []*Broker, group string) map[int32]int64 {
	t.Helper()
	admin := kgoClient(t, bs[0].KafkaAddr, kgo.SeedBrokers(seeds(bs)...))
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
	now := map[int32]int64{}
	waitFor(t, 60*time.Second, "the group's committed offsets", func() bool {
		resp, err := req.RequestWith(ctxFor(t, 5*time.Second), admin)
		if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			return false
		}
		for _, rt := range resp.Groups[0].Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					return false
				}
				now[rp.Partition] = rp.Offset
			}
		}
		return true
	})
	return now
}

// killCoordinatorMidRebalance: on 3 brokers, two members share six
// partitions; a third joins and the group's coordinator is killed with
// SIGKILL at once, mid-rebalance, then restarted. The group settles on
// three members, every record is consumed, and no commit acknowledged
// before the kill is lost.
func killCoordinatorMidRebalance(t *testing.T, bs []*Broker, start startMember, topic, group string) {
	const parts, n = int32(6), 20
	createReplicated(t, bs, topic, parts, 3)
	o := &owners{by: map[int32]string{}, seen: map[string]bool{}}
	m0 := start(t, bs, group, topic, "m0", o)
	defer m0()
	m1 := start(t, bs, group, topic, "m1", o)
	defer m1()
	producePhase(t, bs[0].KafkaAddr, topic, "a", parts, n)
	waitFor(t, 90*time.Second, "two members consume phase a", func() bool { return o.allSeen("a", parts, n) })
	evenOwners(t, o, parts, "m0", "m1")
	waitFor(t, 30*time.Second, "a commit of every partition acknowledged", func() bool { return len(o.ackedCopy()) == int(parts) })
	co := groupCoordinator(t, bs, group)

	before := o.ackedCopy()
	m2 := start(t, bs, group, topic, "m2", o)
	defer m2()
	victim := bs[co-1]
	victim.Kill()
	t.Logf("broker %d (coordinator of %s) killed as m2 joined; acknowledged commits %v", co, group, before)
	time.Sleep(2 * time.Second)
	victim.Restart()

	producePhase(t, bs[co%3].KafkaAddr, topic, "b", parts, n)
	waitFor(t, 120*time.Second, "the recovered group consumes phase b", func() bool { return o.allSeen("b", parts, n) })
	evenOwners(t, o, parts, "m0", "m1", "m2")
	now := committedOffsets(t, bs, group)
	for p, off := range before {
		if now[p] < off {
			t.Errorf("partition %d: committed %d after the kill, below the %d acknowledged before it", p, now[p], off)
		}
	}
	t.Logf("committed after recovery: %v", now)
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, d := range o.double {
		t.Error(d)
	}
}

func TestKIP848OnlyMovedRevokedFranzGo(t *testing.T) {
	t.Parallel()
	onlyMovedRevoked(t, []*Broker{kip848Broker(t)}, franzMember, "kip848-rev-franz", "kip848-rev-franz-g")
}

func TestKIP848OnlyMovedRevokedFranzGoCluster(t *testing.T) {
	bs := kip848Cluster(t, "a 3-broker cluster")
	onlyMovedRevoked(t, bs, franzMember, "kip848-rev-franz3", "kip848-rev-franz3-g")
}

func TestKIP848KillCoordinatorMidRebalanceFranzGo(t *testing.T) {
	bs := kip848Cluster(t, "kills a group coordinator of a 3-broker cluster")
	killCoordinatorMidRebalance(t, bs, franzMember, "kip848-kill-franz", "kip848-kill-franz-g")
}
