package replica

import (
	"fmt"
	"math/rand"
	"path"
	"testing"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/logstore"
)

// TestSnapshotBelowCheckpointAppliesLaterChanges: a replica whose log lost
// its tail restarts with the membership of its checkpoint, later than its
// log (a change at index c). The leader then catches it up with a
// snapshot taken before c: Raft's membership becomes the snapshot's, so
// the change at c, sent again after the snapshot, must be applied to Raft
// again. The replica took c for one its checkpoint already held and
// skipped it: it kept the snapshot's older membership for good (sim seed
// 942712: the controller's n3 kept five voters, the others four and a
// learner).
func TestSnapshotBelowCheckpointAppliesLaterChanges(t *testing.T) {
	g := newGroup(t)
	var ms []*member
	for id := uint64(1); id <= 3; id++ {
		m := &member{id: id, fs: logstore.NewSimFS(rand.New(rand.NewSource(int64(id)))), sm: &appSM{}, ckpt: true}
		g.members[id] = m
		g.bootstrap(m, 1, 2, 3)
		ms = append(ms, m)
	}
	leader, next, lagger := ms[0], ms[1], ms[2]
	g.pump()
	leader.rep.raft.Campaign()
	g.pump()
	g.propose(leader, 4)
	snap := snapshotAt(t, leader, "before-c")
	if s := snapshotAt(t, next, "before-c"); s != snap {
		t.Fatalf("member 2 snapshot at %d, the leader's at %d", s, snap)
	}
	// The change at c: a learner (never started) joins.
	if _, _, err := leader.rep.raft.ProposeConfChange(consensus.ConfChange{Type: consensus.ConfAddLearner, NodeID: 4}); err != nil {
		t.Fatal(err)
	}
	g.pump()
	g.propose(leader, 2)
	want := "{[1 2 3] [4]}"
	if got := fmt.Sprint(lagger.rep.Conf()); got != want {
		t.Fatalf("member 3 before the loss: membership %v, want %s", got, want)
	}
	// Member 3 loses every entry after the bootstrap (as recovery cuts a
	// damaged log) and restarts: its checkpoint still holds the change.
	if err := lagger.rep.Discard(3); err != nil {
		t.Fatal(err)
	}
	g.restart(lagger)
	if got := fmt.Sprint(lagger.rep.Conf()); got != want {
		t.Fatalf("member 3 after the restart: membership %v, want %s (its checkpoint)", got, want)
	}
	// A new leader (whose idea of member 3's log starts afresh) catches it
	// up: a snapshot at snap, then the entries after it, the change among
	// them.
	leader.rep.TransferLeader(next.id)
	g.pump()
	if next.rep.BasicStatus().RaftState != consensus.StateLeader {
		t.Fatalf("member 2 did not take over")
	}
	leader = next
	g.propose(leader, 1)
	if len(lagger.sm.restores) != 2 || lagger.sm.restores[1].Index != snap {
		t.Fatalf("member 3 restored %+v, want its start then the snapshot at %d", lagger.sm.restores, snap)
	}
	if lagger.rep.Applied() != leader.rep.Applied() {
		t.Fatalf("member 3 applied %d, the leader %d", lagger.rep.Applied(), leader.rep.Applied())
	}
	st := lagger.rep.Status()
	raftConf := fmt.Sprint(consensus.ConfState{Voters: st.Config.Voters, Learners: st.Config.Learners})
	if got := fmt.Sprint(lagger.rep.Conf()); got != want || raftConf != want {
		t.Fatalf("member 3 caught up: membership %v (Raft's %v), the leader's %v; want %s", got, raftConf, leader.rep.Conf(), want)
	}
	// And a restart keeps it.
	g.restart(lagger)
	g.pump()
	if got := fmt.Sprint(lagger.rep.Conf()); got != want {
		t.Fatalf("member 3 restarted again: membership %v, want %s", got, want)
	}
}

// TestConfCheckpointReadFaultFailsStart: a replica whose log lost the
// entry of its last membership change restarts from its checkpoint; if
// reading the checkpoint fails (an I/O error), the start must fail rather
// than come up with the older membership its log and snapshot say (the
// stale membership the checkpoint exists to prevent). The vote fence had
// the same hole (sim seed 953535 with --all-faults, node readFence).
func TestConfCheckpointReadFaultFailsStart(t *testing.T) {
	g := newGroup(t)
	var ms []*member
	for id := uint64(1); id <= 3; id++ {
		m := &member{id: id, fs: logstore.NewSimFS(rand.New(rand.NewSource(int64(id)))), sm: &appSM{}, ckpt: true}
		g.members[id] = m
		g.bootstrap(m, 1, 2, 3)
		ms = append(ms, m)
	}
	leader, lagger := ms[0], ms[2]
	g.pump()
	leader.rep.raft.Campaign()
	g.pump()
	if _, _, err := leader.rep.raft.ProposeConfChange(consensus.ConfChange{Type: consensus.ConfAddLearner, NodeID: 4}); err != nil {
		t.Fatal(err)
	}
	g.pump()
	g.propose(leader, 2)
	want := "{[1 2 3] [4]}"
	if got := fmt.Sprint(lagger.rep.Conf()); got != want {
		t.Fatalf("member 3 before the loss: membership %v, want %s", got, want)
	}
	if err := lagger.rep.Discard(3); err != nil {
		t.Fatal(err)
	}
	if err := lagger.log.Close(); err != nil {
		t.Fatal(err)
	}
	lagger.fs.FailNext(logstore.OpRead, path.Join("g", confFile), nil)
	log := lagger.openLog(t)
	rc := raftConfig(lagger.id)
	if rep, err := New(Config{Group: 16, Raft: rc, FS: lagger.fs, Dir: "g"}, log, &appSM{}); err == nil {
		t.Fatalf("a start that could not read the membership checkpoint succeeded with membership %v (want an error, or %s)",
			rep.Conf(), want)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	lagger.sm = &appSM{}
	lagger.start(t, lagger.openLog(t))
	if got := fmt.Sprint(lagger.rep.Conf()); got != want {
		t.Fatalf("member 3 restarted after the failed start: membership %v, want %s (its checkpoint)", got, want)
	}
}
