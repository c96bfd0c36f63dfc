package node

import (
	"fmt"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/controller"
)

// Regression tests for membership changes under faults (issue 13, bug 6:
// seeds 40018 and 40154 with --reassign showed two different entries at
// one index and term). Each fails on the code before its fix.

// stepUntil runs the clock one event at a time until cond holds (bounded
// by max simulated time): for checks that must see every state, not one a
// millisecond.
func (c *cluster) stepUntil(max time.Duration, cond func() bool) bool {
	deadline := c.clk.Monotonic() + max
	for !cond() {
		if c.clk.Monotonic() >= deadline || !c.clk.Step() {
			return false
		}
	}
	return true
}

// moveTopic creates topic "mv" with one partition on brokers 1, 2, 3 of a
// 4-broker cluster, writes a few records, and returns its group.
func moveTopic(t *testing.T, c *cluster) uint64 {
	t.Helper()
	c.waitReady()
	createTopic(t, c, 1, "mv", 1, 3, nil)
	waitLeaders(t, c, "mv", 1)
	p := c.nodes[1].r.Metadata().Topics["mv"].Partitions[0]
	if fmt.Sprint(p.Replicas) != "[1 2 3]" {
		// Placement is the controller's; move it where the test wants it.
		reassign(t, c, 1, "mv", 0, []int32{1, 2, 3})
		if !c.runUntil(20*time.Second, func() bool { return c.settled("mv", "[1 2 3]") }) {
			t.Fatalf("initial placement: %+v", c.nodes[1].r.Metadata().Topics["mv"].Partitions[0])
		}
	}
	for i := 0; i < 5; i++ {
		lead := leaderOf(c, "mv", 0)
		if lead == 0 {
			c.runFor(50 * time.Millisecond)
			i--
			continue
		}
		if sp := produce(c, lead, "mv", 0, -1, batchOf(fmt.Sprint("v", i))); sp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
		}
	}
	return p.Group
}

// settled reports whether every live broker's metadata shows the
// partition's reassignment finished at replicas.
func (c *cluster) settled(topic, replicas string) bool {
	for _, n := range c.nodes {
		if n.r == nil {
			continue
		}
		tp, ok := n.r.Metadata().Topics[topic]
		if !ok {
			return false // a restarted broker's metadata catching up
		}
		p := tp.Partitions[0]
		if p.Target != nil || fmt.Sprint(p.Replicas) != replicas || !p.Settled() {
			return false
		}
	}
	return true
}

// leaderConf returns the membership the group's leader has applied (ok
// false if no node leads it).
func (c *cluster) leaderConf(g uint64) (voters, learners []uint64, ok bool) {
	for _, n := range c.nodes {
		if n.r == nil {
			continue
		}
		if p, found := n.r.parts[g]; found && p.IsLeader() {
			conf := p.Replica().Conf()
			return conf.Voters, conf.Learners, true
		}
	}
	return nil, nil, false
}

// A reassignment that made broker 4 a voter is cancelled before the leader
// removed broker 3: broker 4 is then in neither the replicas nor the target,
// but still a voter of the group, which may count its log and its vote.
// It must keep its replica until the leader's walk back has removed it.
// On the old code broker 4 deleted its replica as soon as it applied the
// cancellation, while every leader still listed it as a voter.
func TestCancelledMoveKeepsReplicaUntilRemoved(t *testing.T) {
	c := newCluster(t, 4, 31)
	g := moveTopic(t, c)
	reassign(t, c, 1, "mv", 0, []int32{1, 2, 4})
	if !c.stepUntil(20*time.Second, func() bool {
		voters, _, ok := c.leaderConf(g)
		return ok && slices.Contains(voters, 4)
	}) {
		t.Fatal("broker 4 never became a voter")
	}
	reassign(t, c, 1, "mv", 0, []int32{1, 2, 3}) // back where it was: a cancellation
	var removedAt time.Duration
	ok := c.stepUntil(30*time.Second, func() bool {
		_, held := c.nodes[4].r.parts[g]
		if voters, learners, ok := c.leaderConf(g); ok && !held &&
			(slices.Contains(voters, 4) || slices.Contains(learners, 4)) {
			t.Fatalf("at %v broker 4 deleted its replica while the leader still lists it (voters %v learners %v)",
				c.clk.Monotonic(), voters, learners)
		}
		if !held && removedAt == 0 {
			removedAt = c.clk.Monotonic()
		}
		return !held && c.settled("mv", "[1 2 3]")
	})
	if !ok {
		t.Fatalf("the cancelled move did not settle: %+v; broker 4 holds the replica: %v",
			c.nodes[1].r.Metadata().Topics["mv"].Partitions[0], c.nodes[4].r.parts[g] != nil)
	}
	t.Logf("broker 4's replica deleted at %v simulated, after its removal committed", removedAt)
}

// A broker left out of both the replicas and the target by a cancelled
// move, but still a voter of the group, must open its replica again when
// it restarts: the group still counts its vote until the walk back removes
// it. Seed 917077 with --corrupt --reassign: a cancelled balancer move left
// __consumer_offsets-0 at voters [1 3 5]; n5 restarted and never opened its
// copy, n1's copy was fenced by a corruption, no leader was ever elected
// and the consumer group and the balancer stayed stuck. Here the group is
// at voters [1 2 3 4] when the move to [1 2 4] is cancelled, and brokers 3
// and 4 and the group's leader go down before the walk back proposes
// anything; broker 4 and the leader's broker restart. Electing a leader in
// [1 2 3 4] then needs 3 of the 4 votes, broker 4's among them. (Without
// the election the walk back needs no vote of broker 4: its removal is
// decided in the newest membership, [1 2 3], whose quorum brokers 1 and 2
// make; since seed 1603770's fix the test had stopped reaching the reopen
// and the mutation held-voter-not-reopened survived.) On the old code
// broker 4 did not open its replica and the partition never settled.
func TestCancelledMoveVoterReopensAfterRestart(t *testing.T) {
	c := newCluster(t, 5, 34)
	g := moveTopic(t, c)
	reassign(t, c, 1, "mv", 0, []int32{1, 2, 4})
	moveEpoch := c.nodes[1].r.Metadata().Topics["mv"].Partitions[0].ReassignEpoch
	if !c.stepUntil(20*time.Second, func() bool {
		voters, _, ok := c.leaderConf(g)
		return ok && slices.Contains(voters, 4)
	}) {
		t.Fatal("broker 4 never became a voter")
	}
	cancel := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "mv"
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = 0, []int32{1, 2, 3} // back where it was
	rt.Partitions = append(rt.Partitions, rp)
	cancel.Topics = append(cancel.Topics, rt)
	c.nodes[1].r.HandleRequest(Client{ClientID: "test"}, cancel, func(kmsg.Response) {})
	// Brokers 3 and 4 go down as soon as the group's leader knows of the
	// cancellation, before its walk back proposes anything.
	var seen controller.Partition
	var leader *tnode
	leaderSawCancel := func() bool {
		for _, n := range c.nodes {
			if n.r == nil {
				continue
			}
			if p, ok := n.r.parts[g]; ok && p.IsLeader() {
				seen, leader = n.r.Metadata().Topics["mv"].Partitions[0], n
				return seen.ReassignEpoch > moveEpoch
			}
		}
		return false
	}
	if !c.stepUntil(10*time.Second, leaderSawCancel) {
		t.Fatal("the group's leader never applied the cancellation")
	}
	voters, learners, _ := c.leaderConf(g)
	if seen.Target != nil || seen.Settled() || fmt.Sprint(voters) != "[1 2 3 4]" || len(learners) > 0 {
		t.Fatalf("at the cancellation the partition is %+v, the leader's voters %v learners %v; want a cancelled walk at voters [1 2 3 4]",
			seen, voters, learners)
	}
	c.nodes[3].crash()
	c.nodes[4].crash()
	if leader.id != 3 && leader.id != 4 {
		leader.crash()
		leader.boot()
	}
	c.nodes[4].boot()
	n4 := c.nodes[4]
	if !c.runUntil(30*time.Second, func() bool {
		_, held := n4.r.parts[g]
		return !held && c.settled("mv", "[1 2 3]")
	}) {
		voters, learners, _ := c.leaderConf(g)
		_, held := n4.r.parts[g]
		t.Fatalf("the cancelled move did not settle with broker 3 down and the group's leader restarted: %+v; leader's voters %v learners %v; restarted broker 4 holds the replica: %v",
			c.nodes[1].r.Metadata().Topics["mv"].Partitions[0], voters, learners, held)
	}
	if voters, learners, ok := c.leaderConf(g); !ok || fmt.Sprint(voters) != "[1 2 3]" || len(learners) > 0 {
		t.Fatalf("after the walk back the leader's membership is voters %v learners %v (led: %v)", voters, learners, ok)
	}
}

// The same replaced walk across a restart: broker 4, made a voter by a
// move to [1 2 4] that is then replaced by [1 2 5], restarts while the
// leader has not removed it yet. It is in neither the replicas nor the
// target, but the group still counts its vote: it must open its replica
// again, doomed, and delete it only once its removal is committed. With
// broker 3 down too, the group's voters [1 2 3 4] have no quorum without
// it. On the old code a restarted broker opened only the replicas the
// metadata places on it, so the group stayed without a leader (sim seed
// 50: a partition stuck in its 4-voter walk, one voter on a broker that
// had restarted, one fenced). As the harness runs it now, broker 4 replays
// metadata whose target still places the partition on it and reopens the
// replica as placed, not doomed: this test does not reach walkMetadata's
// reopen of a held-over voter (TestCancelledMoveVoterReopensAfterRestart
// does).
func TestReplacedMoveReopensAddedReplicaAfterRestart(t *testing.T) {
	// Controller snapshots after every entry: a restarted broker then
	// starts from metadata with the replacement in it, never passing
	// through the target that placed the partition on it.
	c := newClusterWith(t, 5, 33, func(cfg *Config) { cfg.ControllerSnapshotEntries = 1 })
	g := moveTopic(t, c)
	reassign(t, c, 1, "mv", 0, []int32{1, 2, 4})
	if !c.stepUntil(20*time.Second, func() bool {
		voters, _, ok := c.leaderConf(g)
		return ok && slices.Contains(voters, 4) && slices.Contains(voters, 3)
	}) {
		t.Fatal("broker 4 never became a voter beside broker 3")
	}
	c.nodes[3].crash()
	c.nodes[4].crash()
	reassign(t, c, 1, "mv", 0, []int32{1, 2, 5})
	c.nodes[4].boot()
	if !c.runUntil(10*time.Second, func() bool { return c.nodes[4].r != nil && c.nodes[4].r.parts[g] != nil }) {
		t.Fatalf("broker 4 did not open its replica again; metadata %+v", c.nodes[1].r.Metadata().Topics["mv"].Partitions[0])
	}
	ok := c.runUntil(30*time.Second, func() bool {
		_, held := c.nodes[4].r.parts[g]
		return !held && c.settled("mv", "[1 2 5]")
	})
	if !ok {
		voters, learners, _ := c.leaderConf(g)
		t.Fatalf("the replaced move did not settle with broker 3 down: %+v; leader's conf %v learners %v; broker 4 holds the replica: %v",
			c.nodes[1].r.Metadata().Topics["mv"].Partitions[0], voters, learners, c.nodes[4].r.parts[g] != nil)
	}
}

// A replica moved off a broker and back starts from where the removed one
// stopped: at its term, with its vote, behind a vote fence at its old log
// end. On the old code it started blank (term 0, no vote), free to vote
// again in a term it had voted in.
func TestReaddedReplicaRemembersItsRaftState(t *testing.T) {
	c := newCluster(t, 4, 32)
	g := moveTopic(t, c)
	n3 := c.nodes[3]
	var term, last uint64
	reassign(t, c, 1, "mv", 0, []int32{1, 2, 4})
	if !c.stepUntil(30*time.Second, func() bool {
		p, held := n3.r.parts[g]
		if held {
			term = max(term, p.Replica().HardState().Term)
			last = max(last, p.Replica().LastIndex())
		}
		return !held && c.settled("mv", "[1 2 4]")
	}) {
		t.Fatalf("move off broker 3 did not finish")
	}
	if term < 2 || last == 0 {
		t.Fatalf("broker 3's replica held term %d, last index %d before its removal", term, last)
	}
	reassign(t, c, 1, "mv", 0, []int32{1, 2, 3})
	if !c.stepUntil(30*time.Second, func() bool { _, held := n3.r.parts[g]; return held }) {
		t.Fatal("broker 3 never opened its replica again")
	}
	rep := n3.r.parts[g].Replica()
	hs := rep.HardState()
	if hs.Term < term {
		t.Fatalf("re-created replica starts at term %d, below the %d its removed replica was in", hs.Term, term)
	}
	if f := rep.VoteFence(); f.Index < last {
		t.Fatalf("re-created replica's vote fence %v is below its old log end %d", f, last)
	}
	// And it rejoins: the move back completes with every record there.
	if !c.runUntil(30*time.Second, func() bool { return c.settled("mv", "[1 2 3]") }) {
		t.Fatalf("move back did not finish: %+v", c.nodes[1].r.Metadata().Topics["mv"].Partitions[0])
	}
	if !c.runUntil(10*time.Second, func() bool {
		p := n3.r.parts[g]
		return p != nil && p.HighWatermark() == 5 && rep.VoteFence().IsZero()
	}) {
		t.Fatalf("broker 3 did not catch up and lift its fence")
	}
}

// A SetReplicas report made for a target that has been replaced since
// must not be recorded: the controller would name a replica set the
// group is not walking to, and brokers of the current walk would delete
// replicas it counts on. On the old code the delayed report was applied.
func TestStaleMembershipReportRefused(t *testing.T) {
	s := controller.NewState("c")
	for id := int32(1); id <= 4; id++ {
		if res := s.Apply(&controller.Command{RegisterBroker: &controller.Broker{ID: id}}); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	top := &controller.Topic{Name: "mv", Partitions: []controller.Partition{{Index: 0, Replicas: []int32{1, 2, 3}}}}
	if res := s.Apply(&controller.Command{CreateTopic: top}); res.Err != nil {
		t.Fatal(res.Err)
	}
	g := s.Topics["mv"].Partitions[0].Group
	part := func() controller.Partition { return s.Topics["mv"].Partitions[0] }
	s.Apply(&controller.Command{Reassign: &controller.Reassign{Topic: "mv", Target: []int32{1, 2, 4}}})
	// The leader, walking to [1 2 4], reports when it gets there; the
	// report is delayed in flight...
	stale := &controller.SetReplicas{Group: g, Replicas: []int32{1, 2, 4}, Epoch: part().ReassignEpoch}
	// ...while the target is replaced, and the walk to it completes.
	s.Apply(&controller.Command{Reassign: &controller.Reassign{Topic: "mv", Target: []int32{1, 3, 4}}})
	fresh := &controller.SetReplicas{Group: g, Replicas: []int32{1, 3, 4}, Epoch: part().ReassignEpoch}
	if res := s.Apply(&controller.Command{SetReplicas: fresh}); res.Err != nil {
		t.Fatalf("current report refused: %v", res.Err)
	}
	if res := s.Apply(&controller.Command{SetReplicas: stale}); res.Err == nil {
		t.Errorf("stale report accepted")
	}
	if p := part(); fmt.Sprint(p.Replicas) != "[1 3 4]" || p.Target != nil || !p.Settled() {
		t.Fatalf("after a stale report: replicas %v target %v settled %v", p.Replicas, p.Target, p.Settled())
	}
	// A cancellation leaves the partition unsettled until the leader
	// reports the walk back, at the cancellation's epoch.
	s.Apply(&controller.Command{Reassign: &controller.Reassign{Topic: "mv", Target: []int32{2, 3, 4}}})
	s.Apply(&controller.Command{Reassign: &controller.Reassign{Topic: "mv"}})
	if p := part(); p.Settled() {
		t.Fatalf("a cancelled move counts as settled: %+v", p)
	}
	back := &controller.SetReplicas{Group: g, Replicas: []int32{1, 3, 4}, Epoch: part().ReassignEpoch}
	if res := s.Apply(&controller.Command{SetReplicas: back}); res.Err != nil || !part().Settled() {
		t.Fatalf("walk back not recorded: %v %+v", res.Err, part())
	}
}

// A replica re-created from its tombstone and removed again before it
// caught up must leave the first incarnation's log end in its tombstone,
// not its own empty log's. Seed 200012 with --corrupt --reassign: the
// tombstone of a blank second incarnation said "log end 0", the third
// incarnation voted with no fence, and a stale replica was elected (977
// acknowledged writes lost). The old rule kept only the higher term.
func TestTombstoneKeepsTheLogEndOfEveryIncarnation(t *testing.T) {
	hs := logstore.HardState{Term: 4, Vote: 1, Commit: 943}
	first := nextTombstone(tombstone{}, false, hs, consensus.VoteFence{Index: 944, Term: 4})
	if first.LastIndex != 944 || first.LastTerm != 4 || first.Term != 4 || first.Vote != 1 {
		t.Fatalf("first tombstone %+v", first)
	}
	// Re-created from it (fence 944/4, empty log), removed again at once.
	blank := logstore.HardState{Term: 4, Vote: 1}
	fence := consensus.VoteFence{Index: first.LastIndex, Term: first.LastTerm}
	second := nextTombstone(first, true, blank, consensus.VoteFence{}, fence)
	if second.LastIndex != 944 || second.LastTerm != 4 {
		t.Fatalf("second tombstone forgot the first incarnation's log end: %+v", second)
	}
	// Even if the fence was not held any more (a restart lost the
	// in-memory copy), the earlier tombstone still bounds it.
	if third := nextTombstone(second, true, blank, consensus.VoteFence{}); third.LastIndex != 944 {
		t.Fatalf("third tombstone %+v", third)
	}
	// A replica that caught up past the old end (a later term) replaces
	// the bound with its own log end: no fence is kept for ever.
	caught := nextTombstone(second, true, logstore.HardState{Term: 6, Vote: 3}, consensus.VoteFence{Index: 900, Term: 6})
	if caught.LastIndex != 900 || caught.LastTerm != 6 || caught.Term != 6 || caught.Vote != 3 {
		t.Fatalf("caught-up tombstone %+v", caught)
	}
}

// A broker that applied a topic's deletion and deleted its replica may,
// after a restart, replay its controller log from a commit index that
// reached the disk before the deletion did, and open the deleted topic's
// group again before it applies the deletion a second time (seeds 66, 107
// and 165 of the topic-churn workload). The replica re-created then must
// start where the deleted one stopped, as a re-added replica does: on the
// old code it started blank at the bootstrap term with no vote, and could
// vote a second time in a term it had voted in (trace of seed 107: group
// 19 of node 1 deleted at term 2 vote 1, re-opened, deleted again at term 1
// vote 0).
func TestDeletedTopicReopenedByStaleReplayRemembersItsRaftState(t *testing.T) {
	c := newCluster(t, 3, 33)
	c.waitReady()
	createTopic(t, c, 1, "gone", 1, 3, nil)
	waitLeaders(t, c, "gone", 1)
	n3 := c.nodes[3]
	stale := *n3.r.Metadata().Topics["gone"]
	stale.Partitions = slices.Clone(stale.Partitions)
	g := stale.Partitions[0].Group
	var hs logstore.HardState
	var last uint64
	if !c.runUntil(10*time.Second, func() bool {
		p, ok := n3.r.parts[g]
		if !ok {
			return false
		}
		hs, last = p.Replica().HardState(), p.Replica().LastIndex()
		return hs.Term >= 2 && hs.Vote != 0
	}) {
		t.Fatalf("broker 3's replica never voted in a term past the bootstrap: %+v", hs)
	}
	if resp := c.request(1, deleteTopicsReq(5, "gone")).(*kmsg.DeleteTopicsResponse); resp.Topics[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	if !c.runUntil(10*time.Second, func() bool { _, held := n3.r.parts[g]; return !held }) {
		t.Fatal("broker 3 never deleted its replica of the deleted topic")
	}
	// The stale replay: the deleted topic's metadata, applied again.
	if err := n3.r.ensurePartition(&stale, &stale.Partitions[0]); err != nil {
		t.Fatal(err)
	}
	rep := n3.r.parts[g].Replica()
	if got := rep.HardState(); got.Term < hs.Term || (got.Term == hs.Term && got.Vote != hs.Vote) {
		t.Fatalf("re-opened replica of a deleted topic starts at term %d vote %d; the deleted one was at term %d vote %d",
			got.Term, got.Vote, hs.Term, hs.Vote)
	}
	if f := rep.VoteFence(); f.Index < last {
		t.Fatalf("re-opened replica's vote fence %v is below the deleted replica's log end %d", f, last)
	}
}

// A broker whose replica was deleted after its removal must not re-create
// it from metadata older than the deletion. Sim seed 953843 with
// --all-faults: n5's replica of __consumer_offsets-0 was deleted, n5
// restarted with a controller view that still placed it there (its
// durable controller commit index was older than the move), re-created
// the replica from its tombstone and voted a stale candidate into
// leadership. Here broker 3 is moved out of [1 2 3] and deletes its
// replica; then its controller replica restarts at an applied index
// before the move (its meta record's commit index rewound to one before
// the move, as a commit index that never reached the disk leaves it). On
// the old code it opened the group again ("placed here again"); now it
// waits until its metadata passes the deletion, which no longer places it.
func TestDeletedReplicaNotRecreatedFromStaleMetadata(t *testing.T) {
	c := newCluster(t, 4, 35)
	g := moveTopic(t, c)
	n3 := c.nodes[3]
	before := n3.r.ctl.rep.Applied()
	reassign(t, c, 1, "mv", 0, []int32{1, 2, 4})
	if !c.stepUntil(30*time.Second, func() bool {
		_, held := n3.r.parts[g]
		return !held && c.settled("mv", "[1 2 4]")
	}) {
		t.Fatalf("broker 3 never deleted its replica: %+v", c.nodes[1].r.Metadata().Topics["mv"].Partitions[0])
	}
	dir := partitionDir(n3.r.cfg.DataDir, "mv", 0, g)
	tomb, ok, err := readTombstone(n3.fs, dir)
	if err != nil || !ok {
		t.Fatalf("no tombstone after the deletion: %v", err)
	}
	n3.crash()
	rewindControllerCommit(t, n3.fs, before)
	n3.boot()
	if got := n3.r.ctl.rep.Applied(); got >= tomb.CtlIndex && tomb.CtlIndex != 0 {
		t.Fatalf("the restart did not rewind the metadata: applied %d, deleted at %d", got, tomb.CtlIndex)
	}
	// Watch every event of the catch-up: the stale metadata places the
	// group here until the move is applied again.
	reopened, sawStale := false, false
	c.stepUntil(5*time.Second, func() bool {
		if _, cp, ok := n3.r.Metadata().PartitionByGroup(g); ok && slices.Contains(cp.Replicas, 3) {
			sawStale = true
		}
		_, held := n3.r.parts[g]
		reopened = reopened || held
		return reopened
	})
	if !sawStale {
		t.Fatalf("the restarted broker's metadata never placed the group on it: the test did not rewind it")
	}
	if reopened {
		t.Fatalf("broker 3 re-created its deleted replica of group %d from metadata older than the deletion (controller index %d)",
			g, tomb.CtlIndex)
	}
	if got := n3.r.ctl.rep.Applied(); got < tomb.CtlIndex {
		t.Fatalf("broker 3's metadata never caught up with the deletion: applied %d, deleted at %d", got, tomb.CtlIndex)
	}
}

// rewindControllerCommit sets the commit index of the controller log's
// hard state to commit, as a crash that lost the commit-only updates of
// the meta record after commit leaves it: the log keeps its entries, and
// the restart applies only up to commit until a leader says more is
// committed.
func rewindControllerCommit(t *testing.T, fs *logstore.SimFS, commit uint64) {
	t.Helper()
	log, _, err := logstore.Open(fs, "controller", logstore.Options{SegmentBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if log.LastIndex() < commit {
		t.Fatalf("controller log ends at %d, before %d", log.LastIndex(), commit)
	}
	// A meta record is written when the commit index goes down or far
	// enough up (logstore commitRecordEvery): up to the log's end first,
	// then down to commit.
	for _, to := range []uint64{log.LastIndex() + 1000, commit} {
		hs := log.HardState()
		hs.Commit = to
		log.SetHardState(hs)
		if err := log.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if got := log.DurableHardState().Commit; got != commit {
		t.Fatalf("controller commit index %d after the rewind, want %d", got, commit)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
}

// A replica whose removal is committed while its broker is down is deleted
// when the broker comes back, as a broker that stayed up deletes it: a
// reassignment that places the partition there again must find a replica
// re-created from its tombstone, not the old incarnation. Sim seed 1529547
// with --all-faults: n4's disk was replaced, its replica of sim-1 opened
// under the lost-log fence with the group's bootstrap membership [2 3 4],
// and n4 went down before it caught up; sim-1 moved to [1 2 5] (n3 deleted
// its replica) and settled; n4 came back with metadata that no longer
// placed sim-1 there, and never opened (nor deleted) its copy. The
// balancer then moved sim-1 to [4 2 5]: n4 opened the old incarnation,
// whose term probe asked its old voters 2 and 3; n3 never answered, so the
// replica took none of the leader's messages and the move never finished.
// Here broker 3's disk is replaced, its replica of mv ([1 2 3]) opens
// fenced and it goes down at once; mv moves to [1 4 5] (broker 2 deletes
// its replica); broker 3 comes back, and goes down again as soon as its
// metadata shows the move settled, before it deleted its replica, so that
// its next start never sees mv placed there; then mv moves to [1 3 5]. On
// the old code broker 3 kept the old replica (voters [1 2 3], the lost-log
// fence, 3 entries) and the last move never settled.
func TestReplicaRemovedWhileDownDeletedOnRestart(t *testing.T) {
	c := newClusterWith(t, 5, 36, func(cfg *Config) { cfg.ControllerSnapshotEntries = 1 })
	g := moveTopic(t, c)
	if p := c.nodes[1].r.Metadata().Topics["mv"].Partitions[0]; p.Moved {
		t.Fatalf("mv was moved to [1 2 3]: its replicas then have no bootstrap membership, which the test needs: %+v", p)
	}
	n3 := c.nodes[3]
	c.w.ReplaceDisk(netx.NodeID(3))
	if !c.stepUntil(30*time.Second, func() bool { return n3.r.parts[g] != nil && len(n3.r.parts[g].Replica().Conf().Voters) > 0 }) {
		t.Fatal("broker 3 did not open its replica of mv on the new disk and apply its bootstrap membership")
	}
	rep := n3.r.parts[g].Replica()
	if !rep.VoteFence().IsLostLog() || fmt.Sprint(rep.Conf().Voters) != "[1 2 3]" {
		t.Fatalf("broker 3's replica opened with fence %v, voters %v; want the lost-log fence and the bootstrap membership [1 2 3]",
			rep.VoteFence(), rep.Conf().Voters)
	}
	n3.crashWith(logstore.CrashLoseAll)
	reassign(t, c, 1, "mv", 0, []int32{1, 4, 5})
	if !c.runUntil(30*time.Second, func() bool { return c.settled("mv", "[1 4 5]") && c.nodes[2].r.parts[g] == nil }) {
		t.Fatalf("the move to [1 4 5] did not settle: %+v", c.nodes[1].r.Metadata().Topics["mv"].Partitions[0])
	}
	n3.boot()
	dir := partitionDir(n3.r.cfg.DataDir, "mv", 0, g)
	if !c.stepUntil(10*time.Second, func() bool {
		_, cp, ok := n3.r.Metadata().PartitionByGroup(g)
		return ok && cp.Settled() && fmt.Sprint(cp.Replicas) == "[1 4 5]"
	}) {
		t.Fatal("broker 3's metadata did not catch up with the move")
	}
	if !n3.fs.Exists(dir) {
		t.Fatal("broker 3 deleted its replica before the crash: the test no longer reaches a replica left on disk")
	}
	n3.crashWith(logstore.CrashKeepAll)
	n3.boot()
	if _, cp, ok := n3.r.Metadata().PartitionByGroup(g); !ok || !cp.Settled() || fmt.Sprint(cp.Replicas) != "[1 4 5]" {
		t.Fatalf("broker 3 restarted on metadata %+v, not the settled move the test needs", cp)
	}
	deleted := c.runUntil(10*time.Second, func() bool { return n3.r.parts[g] == nil && !n3.fs.Exists(dir) })
	reassign(t, c, 1, "mv", 0, []int32{1, 3, 5})
	if !c.runUntil(30*time.Second, func() bool { return c.settled("mv", "[1 3 5]") }) {
		voters, learners, _ := c.leaderConf(g)
		st := "not open"
		if p := n3.r.parts[g]; p != nil {
			st = fmt.Sprintf("voters %v fence %v last %d", p.Replica().Conf().Voters, p.Replica().VoteFence(), p.Replica().LastIndex())
		}
		t.Fatalf("the move back to broker 3 did not settle: %+v; leader's voters %v learners %v; broker 3's replica: %s; its old one deleted on restart: %v",
			c.nodes[1].r.Metadata().Topics["mv"].Partitions[0], voters, learners, st, deleted)
	}
	if !deleted {
		t.Fatal("broker 3 did not delete its replica of mv, removed while it was down, when it came back")
	}
}

// A start that cannot list the replica directories fails, as a failed read
// of the data directory does: going on, the broker could not tell which
// replicas whose removal settled while it was down it holds
// (leftAtStart), and would leave them on disk. The next start lists them.
func TestReplicaListingFaultFailsStart(t *testing.T) {
	c := newCluster(t, 3, 37)
	c.waitReady()
	createTopic(t, c, 1, "lst", 1, 3, nil)
	waitLeaders(t, c, "lst", 1)
	c.startMayFail = true
	n3 := c.nodes[3]
	parts := path.Dir(partitionDir(n3.r.cfg.DataDir, "lst", 0, 1))
	n3.crash()
	n3.fs.FailNext(logstore.OpList, parts, nil)
	n3.boot()
	if n3.startErr == nil {
		t.Fatal("a start that could not list the replica directories succeeded")
	}
	c.runFor(10 * time.Millisecond)
	n3.boot()
	if n3.r == nil {
		t.Fatalf("broker 3 did not start again: %v", n3.startErr)
	}
	if len(n3.r.heldAtStart) == 0 {
		t.Fatal("broker 3's second start listed no replica directory")
	}
}

// A replica on disk at the start is deleted as left over (leftAtStart)
// only on metadata known to be fresh, never on metadata a restart replays
// from an older commit index: an earlier settled removal it shows may
// since have been undone by a move that placed the partition here again,
// and the replica on disk is then a current member. Sim seeds 1730151 and
// 1730907 with --all-faults (after h-9547's leftAtStart): n2, removed from
// sim-0 and placed there again (its replica re-created from its
// tombstone, a voter of [2 3] with 390 entries), restarted with a
// controller commit index from between the two moves, saw the removal
// settled, and deleted its replica; the group lost a voter's log and an
// acks=all write never finished. Here broker 3 is moved out of [1 2 3]
// and back; it restarts with its controller commit index rewound to just
// after the removal settled. On the old code it deleted its replica
// ("reopened to be deleted") at once; now it waits for a metadata barrier
// (startMetadataFresh), whose metadata places the partition on it. Since
// h-9832 the deletion of a doomed replica waits for a barrier of its own
// (removalFresh), so without startMetadataFresh the replica is still kept,
// but opened doomed ("reopened to be deleted"), which the test refuses.
func TestReplicaPlacedBackNotDeletedOnStaleRestart(t *testing.T) {
	c := newCluster(t, 4, 38)
	g := moveTopic(t, c)
	n3 := c.nodes[3]
	reassign(t, c, 1, "mv", 0, []int32{1, 2, 4})
	if !c.stepUntil(30*time.Second, func() bool {
		_, held := n3.r.parts[g]
		_, cp, ok := n3.r.Metadata().PartitionByGroup(g)
		return !held && ok && cp.Settled() && fmt.Sprint(cp.Replicas) == "[1 2 4]"
	}) {
		t.Fatalf("broker 3 never deleted its replica: %+v", c.nodes[1].r.Metadata().Topics["mv"].Partitions[0])
	}
	removed := n3.r.ctl.rep.Applied()
	reassign(t, c, 1, "mv", 0, []int32{1, 2, 3})
	if !c.runUntil(30*time.Second, func() bool {
		p := n3.r.parts[g]
		return c.settled("mv", "[1 2 3]") && p != nil && slices.Contains(p.Replica().Conf().Voters, 3)
	}) {
		t.Fatalf("the move back to broker 3 did not settle: %+v", c.nodes[1].r.Metadata().Topics["mv"].Partitions[0])
	}
	c.runFor(200 * time.Millisecond)
	dir := partitionDir(n3.r.cfg.DataDir, "mv", 0, g)
	n3.crash()
	rewindControllerCommit(t, n3.fs, removed)
	n3.boot()
	if _, cp, ok := n3.r.Metadata().PartitionByGroup(g); ok && slices.Contains(cp.Replicas, 3) {
		t.Fatalf("broker 3 restarted on metadata %+v that places mv on it: the test did not rewind it", cp)
	}
	deleted, doomed := false, false
	caughtUp := c.stepUntil(10*time.Second, func() bool {
		deleted = deleted || !n3.fs.Exists(dir)
		doomed = doomed || n3.r.doomed[g]
		p := n3.r.parts[g]
		_, cp, ok := n3.r.Metadata().PartitionByGroup(g)
		return deleted || ok && fmt.Sprint(cp.Replicas) == "[1 2 3]" && p != nil && n3.r.startFresh
	})
	if deleted {
		t.Fatalf("broker 3 deleted its replica of mv, a current voter, on metadata replayed from before the move that placed it back")
	}
	// The deletion itself also waits for fresh metadata (removalFresh,
	// seed 2409832); taking the replica for left over is wrong already.
	if doomed {
		t.Fatalf("broker 3 opened its replica of mv, a current voter, to be deleted as left over, on metadata replayed from before the move that placed it back")
	}
	if !caughtUp {
		t.Fatal("broker 3 did not reopen its replica of mv once its metadata caught up")
	}
	if !c.runUntil(10*time.Second, func() bool {
		p := n3.r.parts[g]
		return p != nil && p.Replica().LastIndex() > 0 && n3.fs.Exists(dir)
	}) {
		t.Fatal("broker 3's replica of mv is not open with its log")
	}
}

// A doomed replica is deleted on the metadata's word only once that
// metadata is known to be fresh: a broker catching up on its metadata
// applies an old settled removal that a later move has undone, and its
// replica is then a current voter holding acknowledged entries. Sim seed
// 2409832 with --all-faults: n5's controller log was cut back by a
// corruption; it restarted with metadata at index 81 showing sim-0 in a
// move from [1 2 3] to [4 2 3] (unsettled and not placed on n5, so it
// reopened its replica doomed: a voter of [3 4 5] with the log to 578,
// committed to 567), caught up one step to index 101, where that move had
// settled at [3 2 4], and deleted the replica, 1 ms before it applied the
// moves that had placed sim-0 back on it. With n3's tail lost to a lying
// fsync and n4 behind the commit index, no replica held the committed
// entries 545-567: the vote fences rightly refused n4, and sim-0 never
// elected a leader again. Here mv moves from [1 2 3] to [1 2 4] (broker 5
// in neither), then to [1 2 5]; broker 5 restarts with its controller log
// cut back to where the first move settled and its commit index to where
// that move was in progress. On the old code it reopened its replica
// doomed and deleted it at its first heartbeat, which committed the log
// it still had; now the deletion waits for a metadata barrier
// (removalFresh), whose metadata places mv on it again.
func TestReplicaPlacedBackNotDeletedOnStaleCatchUp(t *testing.T) {
	c := newCluster(t, 5, 39)
	g := moveTopic(t, c)
	n5 := c.nodes[5]
	reassign(t, c, 1, "mv", 0, []int32{1, 2, 4})
	var inMove uint64
	if !c.stepUntil(30*time.Second, func() bool {
		_, cp, ok := n5.r.Metadata().PartitionByGroup(g)
		if ok && inMove == 0 && cp.Target != nil {
			inMove = n5.r.ctl.rep.Applied()
		}
		return ok && cp.Settled() && fmt.Sprint(cp.Replicas) == "[1 2 4]"
	}) || inMove == 0 {
		t.Fatalf("broker 5's metadata never showed the move to [1 2 4] in progress (at %d) and settled: %+v",
			inMove, n5.r.Metadata().Topics["mv"].Partitions[0])
	}
	settledAt := n5.r.ctl.rep.Applied()
	reassign(t, c, 1, "mv", 0, []int32{1, 2, 5})
	if !c.runUntil(30*time.Second, func() bool {
		p := n5.r.parts[g]
		return c.settled("mv", "[1 2 5]") && p != nil && slices.Contains(p.Replica().Conf().Voters, 5)
	}) {
		t.Fatalf("the move to broker 5 did not settle: %+v", c.nodes[1].r.Metadata().Topics["mv"].Partitions[0])
	}
	for i := 0; i < 3; i++ {
		lead := leaderOf(c, "mv", 0)
		if lead == 0 {
			c.runFor(50 * time.Millisecond)
			i--
			continue
		}
		if sp := produce(c, lead, "mv", 0, -1, batchOf(fmt.Sprint("w", i))); sp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
		}
	}
	c.runFor(200 * time.Millisecond)
	last := n5.r.parts[g].Replica().LastIndex()
	dir := partitionDir(n5.r.cfg.DataDir, "mv", 0, g)
	n5.crashWith(logstore.CrashKeepAll)
	truncateControllerLog(t, n5.fs, settledAt)
	rewindControllerCommit(t, n5.fs, inMove)
	n5.boot()
	deleted, reopened, sawSettled := false, false, false
	var first *controller.Partition
	caughtUp := c.stepUntil(10*time.Second, func() bool {
		deleted = deleted || !n5.fs.Exists(dir)
		p := n5.r.parts[g]
		reopened = reopened || p != nil
		_, cp, ok := n5.r.Metadata().PartitionByGroup(g)
		if ok && first == nil {
			cpy := *cp
			first = &cpy
		}
		sawSettled = sawSettled || ok && cp.Settled() && fmt.Sprint(cp.Replicas) == "[1 2 4]"
		return deleted || ok && fmt.Sprint(cp.Replicas) == "[1 2 5]" && p != nil && !n5.r.doomed[g]
	})
	if first == nil || first.Settled() || slices.Contains(first.Replicas, 5) || slices.Contains(first.Target, 5) {
		t.Fatalf("broker 5 restarted on metadata %+v, not the move without it in progress that the test needs", first)
	}
	if deleted {
		t.Fatal("broker 5 deleted its replica of mv, a current voter, on metadata catching up from before the move that placed it back")
	}
	if !reopened || !sawSettled {
		t.Fatalf("broker 5 did not reopen its replica (%v) and then apply the settled move without it (%v): the test no longer reaches the deletion",
			reopened, sawSettled)
	}
	if !caughtUp {
		t.Fatal("broker 5's metadata did not catch up with the move that placed mv on it, or it did not keep its replica")
	}
	if !c.runUntil(10*time.Second, func() bool {
		p := n5.r.parts[g]
		return p != nil && p.Replica().LastIndex() >= last && slices.Contains(p.Replica().Conf().Voters, 5)
	}) {
		t.Fatalf("broker 5's replica of mv is not open with its log (%d entries before the restart)", last)
	}
}

// truncateControllerLog drops the controller log's entries after last, as a
// corruption that cut the file back leaves it: a restart knows the log up
// to last only, and a leader's heartbeat commits it up to there at once.
func truncateControllerLog(t *testing.T, fs *logstore.SimFS, last uint64) {
	t.Helper()
	log, _, err := logstore.Open(fs, "controller", logstore.Options{SegmentBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := log.TruncateAfter(last); err != nil {
		t.Fatal(err)
	}
	if err := log.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := log.LastIndex(); got != last {
		t.Fatalf("controller log ends at %d after the cut, want %d", got, last)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
}
