package node

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/node/controller"
)

// controllerSegment returns the path of node id's (only) controller log
// segment.
func controllerSegment(t *testing.T, c *cluster, id int32) string {
	t.Helper()
	dir := path.Join(".", "controller")
	names, err := c.nodes[id].fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var segs []string
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			segs = append(segs, n)
		}
	}
	if len(segs) != 1 {
		t.Fatalf("node %d: controller segments %v", id, segs)
	}
	return path.Join(dir, segs[0])
}

func transferController(t *testing.T, c *cluster, to int32) {
	t.Helper()
	from := int32(c.nodes[to].r.controllerLeader())
	if from == to {
		return
	}
	c.nodes[from].r.ctl.rep.TransferLeader(uint64(to))
	c.nodes[from].r.queueProcess()
	if !c.runUntil(10*time.Second, func() bool {
		for _, n := range c.nodes {
			if n.r != nil && n.r.controllerLeader() != uint64(to) {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("controller leadership did not move from %d to %d", from, to)
	}
}

func produceValues(t *testing.T, c *cluster, topic string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		for attempt := 0; ; attempt++ {
			if lead := leaderOf(c, topic, 0); lead != 0 {
				if sp := produce(c, lead, topic, 0, -1, batchOf(fmt.Sprint(i))); sp.ErrorCode == 0 {
					break
				} else if attempt > 100 {
					t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
				}
			}
			c.runFor(10 * time.Millisecond)
		}
	}
}

// TestDamagedControllerLogIsRepairedFromPeers damages, on the live
// controller leader, the controller log entry that created a topic. The
// damage is found when the leader reads the entry to send it to a broker
// that joins. The leader must hand over, discard the damaged entries and
// fetch them again from its peers (before, the controller log was only
// reported, and the new broker never caught up) — and while its metadata
// is rewound to before the topic existed it must not delete its replica
// of that topic.
func TestDamagedControllerLogIsRepairedFromPeers(t *testing.T) {
	c := newCluster(t, 3, 61)
	c.waitReady()
	const topic = "ctl-repair-victim"
	createTopic(t, c, 1, topic, 1, 3, nil)
	waitLeaders(t, c, topic, 1)
	produceValues(t, c, topic, 10)
	// Restart x so that its entry cache is empty: its leader reads the
	// log file to catch a new broker up.
	const x = 2
	c.nodes[x].crash()
	c.nodes[x].boot()
	c.waitReady()
	transferController(t, c, x)
	before := c.nodes[x].r.byName[topicPartition{topic, 0}]
	if before == nil {
		t.Fatalf("node %d holds no replica of %s", x, topic)
	}
	seg := controllerSegment(t, c, x)
	data, err := c.nodes[x].fs.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, []byte(topic))
	if at < 0 {
		t.Fatalf("no entry of %s names %s", seg, topic)
	}
	if err := c.nodes[x].fs.FlipBit(seg, int64(at+3), 2); err != nil {
		t.Fatal(err)
	}
	c.addNode(4)
	if !c.runUntil(30*time.Second, func() bool {
		r := c.nodes[x].r
		_, fenced := fencesInForce(r)[controller.ControllerGroup]
		ready, _ := c.nodes[4].r.Serving()
		return ready && r.stats.Repairs > 0 && !fenced && r.controllerLeader() != 0 &&
			r.Metadata().Topics[topic] != nil && r.ctl.rep.Applied() >= c.nodes[1].r.ctl.rep.Applied()
	}) {
		r := c.nodes[x].r
		ready, why := c.nodes[4].r.Serving()
		t.Fatalf("node %d: repairs %d, fences %v, damaged %v, applied %d (node 1: %d); node 4 ready %v (%s)", x, r.stats.Repairs,
			fencesInForce(r), r.ctl.rep.Damaged(), r.ctl.rep.Applied(), c.nodes[1].r.ctl.rep.Applied(), ready, why)
	}
	if after := c.nodes[x].r.byName[topicPartition{topic, 0}]; after != before {
		t.Fatalf("node %d closed (or deleted) its replica of %s while its metadata was rewound", x, topic)
	}
	got, _ := fetchAll(t, c, leaderOf(c, topic, 0), topic, 0)
	if len(got) != 10 {
		t.Fatalf("%s holds %d records, 10 were acknowledged", topic, len(got))
	}
}

// TestControllerLogCutBelowCommitIsFenced cuts a follower's controller log
// back below the commit index its meta record holds, as a disk losing
// synced writes would. The replica may have acknowledged entries past any
// point it can name, so it must come back fenced without bound (before,
// the controller's log was not fenced at all); the fence lifts once an
// entry of a newer term reaches it, and the reopening that takes must not
// close or delete any of its partition replicas.
func TestControllerLogCutBelowCommitIsFenced(t *testing.T) {
	c := newCluster(t, 3, 62)
	c.waitReady()
	createNumbered(t, c, "cut", 0, 12)
	const f = 3
	transferController(t, c, 1)
	r := cutControllerLog(t, c, f)
	if !controllerFencedWithoutBound(r) {
		t.Fatalf("a controller log cut below its recorded commit came back with fence %v (raft %v)",
			fencesInForce(r)[controller.ControllerGroup], r.ctl.rep.VoteFence())
	}
	waitControllerCaughtUp(t, c, f, "cut-11")
	open := map[uint64]any{}
	for g, p := range r.parts {
		open[g] = p
	}
	fenceLiftsInANewTerm(t, c, r)
	c.runFor(2 * time.Second)
	for g, p := range open {
		if r.parts[g] != p {
			t.Fatalf("group %d was closed or deleted while the controller was reopened", g)
		}
	}
	if r.ctl.rep.BasicStatus().Lead == 0 {
		t.Fatal("no controller leader known after the reopen")
	}
}

// createNumbered creates topics prefix-from to prefix-(to-1), one
// partition on three replicas each, through node 1, and waits for the
// last one's leader.
func createNumbered(t *testing.T, c *cluster, prefix string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		createTopic(t, c, 1, fmt.Sprintf("%s-%d", prefix, i), 1, 3, nil)
	}
	waitLeaders(t, c, fmt.Sprintf("%s-%d", prefix, to-1), 1)
}

// cutControllerLog crashes node f, cuts its controller log back to half
// of what its meta record says was committed, boots it and returns its
// new reactor.
func cutControllerLog(t *testing.T, c *cluster, f int32) *Reactor {
	t.Helper()
	seg := controllerSegment(t, c, f)
	c.nodes[f].crash()
	fs := c.nodes[f].fs
	prefix := fs.CommittedPrefix("controller", path.Base(seg))
	if prefix == 0 {
		t.Fatal("no committed entry recorded in the controller's meta record")
	}
	if err := fs.TruncateFile(seg, prefix/2); err != nil {
		t.Fatal(err)
	}
	c.nodes[f].boot()
	return c.nodes[f].r
}

// controllerFencedWithoutBound: r's controller replica may vote for no
// one, in the reactor's fences and in Raft.
func controllerFencedWithoutBound(r *Reactor) bool {
	fence := fencesInForce(r)[controller.ControllerGroup]
	return fence.Index == fenceUnbounded && !r.ctl.rep.VoteFence().IsZero()
}

// waitControllerCaughtUp waits until node f has applied as much controller
// metadata as node 1 and opened partition 0 of topic.
func waitControllerCaughtUp(t *testing.T, c *cluster, f int32, topic string) {
	t.Helper()
	r := c.nodes[f].r
	if !c.runUntil(20*time.Second, func() bool {
		_, ok := r.byName[topicPartition{topic, 0}]
		return ok && r.ctl.rep.Applied() >= c.nodes[1].r.ctl.rep.Applied()
	}) {
		t.Fatalf("node %d did not catch up", f)
	}
}

// fenceLiftsInANewTerm checks r's controller fence holds until an entry of
// a newer term, then moves the controller's leadership to node 2 (a new
// term) and waits for the fence to lift.
func fenceLiftsInANewTerm(t *testing.T, c *cluster, r *Reactor) {
	t.Helper()
	if _, fenced := fencesInForce(r)[controller.ControllerGroup]; !fenced {
		t.Fatal("the fence lifted before any entry of a newer term")
	}
	transferController(t, c, 2) // a new term
	if !c.runUntil(20*time.Second, func() bool {
		_, fenced := fencesInForce(r)[controller.ControllerGroup]
		return !fenced && r.ctl.rep.VoteFence().IsZero()
	}) {
		t.Fatalf("the fence %v did not lift after a new term", fencesInForce(r)[controller.ControllerGroup])
	}
}

// TestControllerLogCutBelowSnapshotIsFenced cuts a follower's controller
// log back below its snapshot point, when the meta record's commit index
// is that snapshot point and the replica holds (and has acknowledged)
// entries past it: the record is rewritten with each snapshot, not with
// every commit. Recovery restarts the log right after the snapshot; the
// replica must still come back fenced without bound, since nothing says
// how far its lost entries went. Before, it was fenced at the snapshot
// point, which its restarted log already reached, so it voted at once as
// if whole (sim seed 911081 --corrupt --reassign: such a replica voted for
// a candidate lacking entry 91, which it had acknowledged, and the entry,
// committed, was overwritten).
func TestControllerLogCutBelowSnapshotIsFenced(t *testing.T) {
	c := newCluster(t, 3, 64)
	c.waitReady()
	const f = 3
	snap, held := snapshotBelowAcknowledged(t, c, f)
	r := cutControllerLog(t, c, f)
	if last := r.ctl.rep.LastIndex(); last != snap {
		t.Fatalf("the cut log restarted at %d, want right after the snapshot at %d", last, snap)
	}
	if !controllerFencedWithoutBound(r) {
		t.Fatalf("a controller log cut below its snapshot at %d (it held %d) came back with fence %v (raft %v)",
			snap, held, fencesInForce(r)[controller.ControllerGroup], r.ctl.rep.VoteFence())
	}
	waitControllerCaughtUp(t, c, f, "snap-7")
	fenceLiftsInANewTerm(t, c, r)
}

// snapshotBelowAcknowledged makes node f's controller replica take a
// snapshot at its commit index, with the meta record's commit index there,
// then hold (and acknowledge) entries past it; it returns the snapshot
// point and the durable log's end.
func snapshotBelowAcknowledged(t *testing.T, c *cluster, f int32) (snap, held uint64) {
	t.Helper()
	createNumbered(t, c, "snap", 0, 4)
	transferController(t, c, 1)
	r := c.nodes[f].r
	// A snapshot on the follower at its commit index, and no other.
	r.cfg.ControllerSnapshotEntries = 1
	createTopic(t, c, 1, "snap-4", 1, 3, nil)
	if !c.runUntil(10*time.Second, func() bool {
		rep := r.ctl.rep
		return rep.Snapshot().Index > 0 && rep.Snapshot().Index == rep.Applied() && rep.Applied() == c.nodes[1].r.ctl.rep.Applied()
	}) {
		t.Fatalf("node %d took no snapshot at its applied index", f)
	}
	c.runFor(500 * time.Millisecond)
	r.cfg.ControllerSnapshotEntries = 1 << 30
	snap = r.ctl.rep.Snapshot().Index
	createNumbered(t, c, "snap", 5, 8)
	held = r.ctl.rep.DurableIndex()
	if recorded := r.ctl.rep.DurableHardState().Commit; recorded != snap || r.ctl.rep.Snapshot().Index != snap || held <= snap {
		t.Fatalf("the scenario needs a recorded commit at the snapshot point %d and entries past it: recorded commit %d, snapshot %d, durable log to %d",
			snap, recorded, r.ctl.rep.Snapshot().Index, held)
	}
	return snap, held
}

// The same cut, but the start that finds it fails after recovery restarted
// the log after its snapshot and before the node made its fence durable:
// the restart's meta record is written and its sync fails (an injected
// fault). The next start must still come back fenced without bound. Before
// the loss record (logstore/loss.go) it found a consistent log at the
// snapshot point, with no trace of the loss, and opened unfenced (sim seed
// 5 on h-23 e17261e: such a controller replica voted for a candidate
// lacking an entry it had acknowledged, committed-entry-changed).
func TestControllerLossSurvivesAFailedStart(t *testing.T) {
	c := newCluster(t, 3, 64)
	c.waitReady()
	const f = 3
	snap, held := snapshotBelowAcknowledged(t, c, f)
	seg := controllerSegment(t, c, f)
	c.nodes[f].crash()
	fs := c.nodes[f].fs
	prefix := fs.CommittedPrefix("controller", path.Base(seg))
	if prefix == 0 {
		t.Fatal("no committed entry recorded in the controller's meta record")
	}
	if err := fs.TruncateFile(seg, prefix/2); err != nil {
		t.Fatal(err)
	}
	// The failed start, as far as the node got: the log's open, whose
	// restart meta record (into the meta file not holding the newest
	// record) fails its sync.
	fs.FailNext(logstore.OpSync, path.Join("controller", olderMetaFile(t, fs, "controller")), nil)
	if l, _, err := logstore.Open(fs, "controller", logstore.Options{SegmentBytes: 64 << 20}); err == nil {
		l.Close()
		t.Fatal("the open with a failing meta sync succeeded")
	}
	c.nodes[f].boot()
	r := c.nodes[f].r
	if last := r.ctl.rep.LastIndex(); last != snap {
		t.Fatalf("the cut log restarted at %d, want right after the snapshot at %d", last, snap)
	}
	if !controllerFencedWithoutBound(r) {
		t.Fatalf("after a failed start, a controller log cut below its snapshot at %d (it held %d) came back with fence %v (raft %v)",
			snap, held, fencesInForce(r)[controller.ControllerGroup], r.ctl.rep.VoteFence())
	}
	waitControllerCaughtUp(t, c, f, "snap-7")
	fenceLiftsInANewTerm(t, c, r)
}

// olderMetaFile names the meta file in dir not holding the newest record
// (the next one written), by the records' sequence numbers (bytes 12-20
// of a meta file, logstore/meta.go).
func olderMetaFile(t *testing.T, fs *logstore.SimFS, dir string) string {
	t.Helper()
	seq := func(name string) uint64 {
		b, err := fs.ReadFile(path.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 20 {
			return 0
		}
		return binary.LittleEndian.Uint64(b[12:])
	}
	if seq("meta.a") > seq("meta.b") {
		return "meta.b"
	}
	return "meta.a"
}
