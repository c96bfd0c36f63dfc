package node

import (
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestReplacedDiskFencesOldReplicas: every broker registers the disk id of
// its data directory; broker 3 restarted on an empty disk registers a new
// one, the controller records it with FenceBelow past the existing
// groups, and broker 3's replica of the old topic opens with the lost-log
// fence, which becomes the leader's log end and then lifts once caught
// up. A topic created after the replacement opens unfenced.
func TestReplacedDiskFencesOldReplicas(t *testing.T) {
	c := newCluster(t, 3, 71)
	c.waitReady()
	createTopic(t, c, 1, "old", 1, 3, nil)
	waitLeaders(t, c, "old", 1)
	for i := 0; i < 5; i++ {
		resp := c.request(leaderOf(c, "old", 0), produceReq("old", 0, -1, batchOf("a", "b"))).(*kmsg.ProduceResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce: code %d", code)
		}
	}
	old := c.nodes[3].r.DiskID()
	ctl := func() *controller.State { return c.nodes[1].r.ctl.state }
	for id := int32(1); id <= 3; id++ {
		if b := ctl().Brokers[id]; b == nil || b.DiskID != c.nodes[id].r.DiskID() || b.DiskID == "" || b.FenceBelow != 0 {
			t.Fatalf("broker %d registered %+v, its disk id is %q", id, b, c.nodes[id].r.DiskID())
		}
	}
	g := c.nodes[1].r.byName[topicPartition{"old", 0}].Replica().Group

	c.w.ReplaceDisk(netx.NodeID(3))
	n3 := c.nodes[3]
	if n3.r.DiskID() == old || n3.r.DiskID() == "" {
		t.Fatalf("replaced disk kept id %q", old)
	}
	var first consensus.VoteFence
	opened := c.runUntil(30*time.Second, func() bool {
		if p, ok := n3.r.parts[uint64(g)]; ok {
			first = p.Replica().VoteFence()
			return true
		}
		return false
	})
	if !opened {
		t.Fatal("broker 3 did not open its replica of old-0 on the new disk")
	}
	if first.IsZero() {
		t.Fatal("broker 3's replica of a group that predates its disk opened unfenced")
	}
	c.runUntil(10*time.Second, func() bool { return ctl().Brokers[3].DiskID == n3.r.DiskID() })
	if b := ctl().Brokers[3]; b.DiskID != n3.r.DiskID() || b.FenceBelow <= uint64(g) {
		t.Fatalf("controller's record of broker 3 after the replacement: %+v", b)
	}
	dir := partitionDir(n3.r.cfg.DataDir, "old", 0, uint64(g))
	lifted := c.runUntil(30*time.Second, func() bool {
		rep := n3.r.parts[uint64(g)].Replica()
		return rep.VoteFence().IsZero() && n3.r.local[uint64(g)].fence.IsZero() &&
			!n3.fs.Exists(path.Join(dir, fenceFile)) && rep.LastIndex() >= 6
	})
	rep := n3.r.parts[uint64(g)].Replica()
	if !lifted {
		t.Fatalf("fence not lifted: raft %v, durable %v, leader log %v, last %d",
			rep.VoteFence(), n3.r.local[uint64(g)].fence, rep.LeaderLogFence(), rep.LastIndex())
	}
	if lf := rep.LeaderLogFence(); lf.IsZero() || lf.IsLostLog() {
		t.Fatalf("the lost-log fence did not become a leader's log end: %v", lf)
	}

	createTopic(t, c, 1, "new", 1, 3, nil)
	waitLeaders(t, c, "new", 1)
	gNew := c.nodes[1].r.byName[topicPartition{"new", 0}].Replica().Group
	if !c.runUntil(10*time.Second, func() bool { _, ok := n3.r.parts[uint64(gNew)]; return ok }) {
		t.Fatal("broker 3 did not open new-0")
	}
	if f := n3.r.parts[uint64(gNew)].Replica().LeaderLogFence(); !f.IsZero() || !n3.r.local[uint64(gNew)].fence.IsZero() {
		t.Fatalf("a group created after the replacement was fenced: %v", f)
	}
}

// TestRegisterBrokerDiskID: the controller's record of a broker's disk id
// and of its replacement.
func TestRegisterBrokerDiskID(t *testing.T) {
	s := controller.NewState("c")
	reg := func(disk string) *controller.Broker {
		t.Helper()
		if res := s.Apply(&controller.Command{RegisterBroker: &controller.Broker{ID: 1, RaftAddr: "a", DiskID: disk}}); res.Err != nil {
			t.Fatal(res.Err)
		}
		return s.Brokers[1]
	}
	if b := reg("d1"); b.DiskID != "d1" || b.FenceBelow != 0 {
		t.Fatalf("first registration: %+v", b)
	}
	if b := reg("d1"); b.FenceBelow != 0 {
		t.Fatalf("same disk again: %+v", b)
	}
	s.NextGroup = 42
	if b := reg("d2"); b.DiskID != "d2" || b.FenceBelow != 42 {
		t.Fatalf("new disk: %+v", b)
	}
	s.NextGroup = 50
	if b := reg(""); b.DiskID != "d2" || b.FenceBelow != 42 {
		t.Fatalf("a registration without a disk id (older broker): %+v", b)
	}
	if b := reg("d2"); b.FenceBelow != 42 {
		t.Fatalf("re-registration of the same disk moved the fence: %+v", b)
	}
}

// TestControllerFenceReadFaultFailsStart: a broker whose disk was replaced
// opens its controller replica behind the durable lost-log fence. If a
// restart then fails to read that fence file (an I/O error), the start
// must fail, not open the replica unfenced: unfenced, a replica holding
// the bootstrap entries only votes for any candidate, and its vote can
// elect one lacking a committed entry (sim seed 953535 with --all-faults:
// committed-entry-changed on the controller group). The next start, whose
// read succeeds, comes back behind the fence.
func TestControllerFenceReadFaultFailsStart(t *testing.T) {
	c := newCluster(t, 3, 73)
	c.waitReady()
	c.startMayFail = true
	c.w.ReplaceDisk(netx.NodeID(3))
	n3 := c.nodes[3]
	if n3.r == nil {
		t.Fatalf("broker 3 did not start on its new disk: %v", n3.startErr)
	}
	if f := n3.r.ctl.rep.VoteFence(); !f.IsLostLog() {
		t.Fatalf("the controller replica on a new disk opened with fence %v, want the lost-log fence", f)
	}
	// Down before it heard from a leader: the fence record stays.
	n3.crash()
	name := path.Join("controller", fenceFile)
	if !n3.fs.Exists(name) {
		t.Fatal("no durable controller vote fence after a start on a new disk")
	}
	n3.fs.FailNext(logstore.OpRead, name, nil)
	n3.boot()
	if n3.startErr == nil {
		t.Fatalf("a start that could not read the controller's vote fence succeeded; the replica opened with fence %v",
			n3.r.ctl.rep.VoteFence())
	}
	c.runFor(10 * time.Millisecond)
	n3.boot()
	if n3.r == nil {
		t.Fatalf("broker 3 did not start again: %v", n3.startErr)
	}
	if f := n3.r.ctl.rep.VoteFence(); !f.IsLostLog() {
		t.Fatalf("after the failed start, the controller replica opened with fence %v, want the lost-log fence", f)
	}
}

// TestFormattedStartFailedBeforeControllerOpen: a broker restarted on a
// new disk formats it (writes its disk id), then fails on a read fault
// opening the controller log. The next start finds a disk id and does not
// take the directory for a fresh one, so the controller's lost-log fence
// must already be durable: without it the replica, holding the bootstrap
// entries only and its term and vote forgotten, votes again in a term it
// voted in on its old disk (sim seed 14 of
// TestReplacedVoterUnderHeavyReadFaults: two controller leaders in term 3).
func TestFormattedStartFailedBeforeControllerOpen(t *testing.T) {
	c := newCluster(t, 3, 74)
	c.waitReady()
	c.startMayFail = true
	n3 := c.nodes[3]
	n3.crash()
	n3.fs.Wipe()
	n3.fs.FailNext(logstore.OpRead, path.Join("controller", "meta.a"), nil)
	n3.boot()
	if n3.startErr == nil {
		t.Fatal("the start with a read fault on the controller's meta file succeeded; the test no longer reaches the failed start")
	}
	if !n3.fs.Exists(diskIDFile) {
		t.Fatal("the failed start wrote no disk id; the test no longer reaches a formatted directory")
	}
	c.runFor(10 * time.Millisecond)
	n3.boot()
	if n3.r == nil {
		t.Fatalf("broker 3 did not start again: %v", n3.startErr)
	}
	if f := n3.r.ctl.rep.VoteFence(); !f.IsLostLog() {
		t.Fatalf("after a failed start on the formatted new disk, the controller replica opened with fence %v, want the lost-log fence", f)
	}
}

// TestLostLogFenceRecordFollowsRaft: every controller replica of a new
// cluster opens under the lost-log fence (fenceNewController). Its Raft
// turns the fence into the leader's log end and lifts it once the log
// holds that end; the durable record must follow within the same pass, not
// at the next tick. A member that crashed in between came back under the
// lost-log fence though its durable log held the leader's log end and it
// had acknowledged entries past it as an unfenced voter: admitting no
// candidate and never campaigning, it needs a leader to lift it, and with
// another voter fenced over a loss the group never elects again (sim seed
// 1072293 with --all-faults: n3's controller replica crashed 7 ms after its
// Raft lifted the fence, n1 lost its controller log to a lying fsync, and
// the controller group stayed leaderless through the liveness phase).
// Each seed steps a new cluster event by event to the first moment, with
// no Ready pass pending, that a member's Raft has lifted the fence over a
// durable log, crashes that member there and restarts it: it must come
// back unfenced.
func TestLostLogFenceRecordFollowsRaft(t *testing.T) {
	for _, seed := range []int64{71, 72, 73, 74, 75, 76} {
		c := newCluster(t, 3, seed)
		var lifted *tnode
		for steps := 0; lifted == nil; steps++ {
			if steps > 1_000_000 || !c.w.Step() {
				t.Fatalf("seed %d: no controller replica's Raft lifted its lost-log fence", seed)
			}
			for id := int32(1); id <= 3; id++ {
				n := c.nodes[id]
				if n.r == nil || n.r.processQueued || n.r.ctl.rep == nil {
					continue
				}
				rep := n.r.ctl.rep
				lf := rep.LeaderLogFence()
				if !lf.IsZero() && rep.VoteFence().IsZero() && rep.DurableIndex() >= lf.Index {
					lifted = n
					break
				}
			}
		}
		g := uint64(controller.ControllerGroup)
		if f := lifted.r.local[g].fence; f.IsLostLog() {
			t.Errorf("seed %d: n%d's Raft lifted the lost-log fence (leader's log end %v, durable log at %d), its durable record is still the lost-log fence",
				seed, lifted.id, lifted.r.ctl.rep.LeaderLogFence(), lifted.r.ctl.rep.DurableIndex())
		}
		lifted.crashWith(logstore.CrashLoseAll)
		lifted.boot()
		if lifted.r == nil {
			t.Fatalf("seed %d: n%d did not restart: %v", seed, lifted.id, lifted.startErr)
		}
		if f := lifted.r.ctl.rep.VoteFence(); !f.IsZero() {
			t.Errorf("seed %d: n%d's controller replica restarted fenced (%v) over a durable log past the leader's log end it had learned",
				seed, lifted.id, f)
		}
	}
}

// TestReplacedControllerVoterKeepsAcknowledgedEntries: controller voter 3
// acknowledges entries that voter 2, cut off, lacks (they commit with
// voters 1 and 3); then voter 1 goes down and voter 3 is restarted on a
// new disk, and 2 and 3 are connected again. Voter 3's controller replica
// holds the bootstrap entries only and has forgotten its term and vote,
// and only its lost-log fence (fenceNewController, made durable before
// its disk id) keeps it from voting for voter 2, whose log lacks the
// entries 3 acknowledged on its old disk. Unfenced, it votes for 2, whose
// leadership overwrites those committed entries on every voter once 1 is
// back (the mutation lost-disk-controller-unfenced, which the sim seeds of
// TestReplacedDiskIsFenced stopped reaching). Fenced, the group elects no
// leader without voter 1, and once 1 is back every voter holds the
// entries.
func TestReplacedControllerVoterKeepsAcknowledgedEntries(t *testing.T) {
	c := newCluster(t, 3, 76)
	c.waitReady()
	transferController(t, c, 1)
	n1, n2, n3 := c.nodes[1], c.nodes[2], c.nodes[3]
	c.w.Isolate(netx.NodeID(2))
	const acked = "acked-by-3"
	createTopic(t, c, 1, acked, 1, 3, nil)
	commit := n1.r.ctl.rep.Status().Commit
	if !c.runUntil(5*time.Second, func() bool { return n3.r.ctl.rep.DurableIndex() >= commit }) {
		t.Fatalf("voter 3 did not make the controller log durable to the commit index %d", commit)
	}
	if n2.r.ctl.rep.LastIndex() >= commit || n2.r.Metadata().Topics[acked] != nil {
		t.Fatalf("voter 2, cut off, holds the controller log to %d (commit %d): the scenario needs it behind", n2.r.ctl.rep.LastIndex(), commit)
	}
	n1.crash()
	c.w.ReplaceDisk(netx.NodeID(3))
	if n3.r == nil {
		t.Fatalf("broker 3 did not start on its new disk: %v", n3.startErr)
	}
	c.w.Heal()
	// Voters 2 and 3 alone: 3 must not make 2, which lacks committed
	// entries, the leader.
	var overwrote string
	c.runUntil(10*time.Second, func() bool {
		st := n2.r.ctl.rep.BasicStatus()
		if st.Lead == 2 && n2.r.controllerLeader() == 2 {
			overwrote = fmt.Sprintf("voter 2 became the controller leader in term %d with its log ending at %d, below the commit index %d; voter 3 on its new disk has vote fence %v",
				st.Term, n2.r.ctl.rep.LastIndex(), commit, n3.r.ctl.rep.VoteFence())
			return true
		}
		return false
	})
	n1.boot()
	if !c.runUntil(30*time.Second, func() bool {
		for _, n := range []*tnode{n1, n2, n3} {
			if n.r == nil || n.r.controllerLeader() == 0 || n.r.ctl.rep.Applied() < commit {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the controller group did not recover with voter 1 back%s", prefixed("; ", overwrote))
	}
	for _, n := range []*tnode{n1, n2, n3} {
		if n.r.Metadata().Topics[acked] == nil {
			t.Fatalf("voter %d lost topic %s, whose creation voters 1 and 3 had committed%s", n.id, acked, prefixed(": ", overwrote))
		}
	}
	if overwrote != "" {
		t.Fatal(overwrote)
	}
}

func prefixed(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}
