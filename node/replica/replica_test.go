package replica

import (
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/logstore"
)

// appSM records what the replica hands the application.
type appSM struct {
	applied    []consensus.Entry
	restores   []consensus.SnapshotMeta
	restoreApp []string
	restoreErr error
}

func (s *appSM) Apply(e consensus.Entry) {
	e.Data = append([]byte(nil), e.Data...)
	s.applied = append(s.applied, e)
}

func (s *appSM) Restore(meta consensus.SnapshotMeta, sd SnapshotData) error {
	if s.restoreErr != nil {
		return s.restoreErr
	}
	s.restores = append(s.restores, meta)
	s.restoreApp = append(s.restoreApp, string(sd.App))
	s.applied = nil // the state is replaced; entries after meta.Index follow
	return nil
}

// member is one node's replica of a test group.
type member struct {
	id  uint64
	fs  *logstore.SimFS
	log *logstore.Log
	sm  *appSM
	rep *Replica
}

// group is a Raft group of members wired together by hand: messages are
// delivered by pump, in order.
type group struct {
	t       *testing.T
	members map[uint64]*member
	queue   []consensus.Message
}

func newGroup(t *testing.T) *group { return &group{t: t, members: map[uint64]*member{}} }

func raftConfig(id uint64) consensus.Config {
	return consensus.Config{ID: id, ElectionTicks: 10, HeartbeatTicks: 1, MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 16,
		CheckQuorum: true, PreVote: true, Rand: rand.New(rand.NewSource(int64(id)))}
}

// add starts member id on a new log; voters, if any, bootstrap the group
// as node/replicas.go does.
func (g *group) add(id uint64, voters ...uint64) *member {
	m := &member{id: id, fs: logstore.NewSimFS(rand.New(rand.NewSource(int64(id)))), sm: &appSM{}}
	g.members[id] = m
	log := m.openLog(g.t)
	if len(voters) > 0 {
		es := make([]logstore.Entry, len(voters))
		for i, v := range voters {
			cc := consensus.ConfChange{Type: consensus.ConfAddVoter, NodeID: v}
			es[i] = ToLog(consensus.Entry{Term: 1, Index: uint64(i + 1), Type: consensus.EntryConfChange, Data: cc.Marshal()})
		}
		if err := log.Append(es...); err != nil {
			g.t.Fatal(err)
		}
		log.SetHardState(logstore.HardState{Term: 1, Commit: uint64(len(voters))})
		if err := log.Sync(); err != nil {
			g.t.Fatal(err)
		}
	}
	m.start(g.t, log)
	return m
}

func (m *member) openLog(t *testing.T) *logstore.Log {
	log, _, err := logstore.Open(m.fs, "g", logstore.Options{SegmentBytes: 1024})
	if err != nil {
		t.Fatalf("member %d: open: %v", m.id, err)
	}
	return log
}

func (m *member) start(t *testing.T, log *logstore.Log) {
	rc := raftConfig(m.id)
	rc.Fresh = log.HardState().Term <= 1 // as node/replicas.go raftConfig
	rep, err := New(Config{Group: 16, Raft: rc}, log, m.sm)
	if err != nil {
		t.Fatalf("member %d: %v", m.id, err)
	}
	m.log, m.rep = log, rep
}

// restart closes the member's log and starts it again.
func (g *group) restart(m *member) {
	if err := m.log.Close(); err != nil {
		g.t.Fatal(err)
	}
	m.sm = &appSM{}
	m.start(g.t, m.openLog(g.t))
}

func (g *group) ids() []uint64 {
	var ids []uint64
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// pump walks every member's Readies and delivers messages until the group
// is quiet.
func (g *group) pump() {
	g.t.Helper()
	for round := 0; ; round++ {
		if round > 1000 {
			g.t.Fatalf("group never went quiet")
		}
		busy := false
		for _, id := range g.ids() {
			m := g.members[id]
			if !m.rep.HasWork() {
				continue
			}
			busy = true
			now, mustSync, err := m.rep.Take()
			if err != nil {
				g.t.Fatalf("member %d: take: %v", id, err)
			}
			g.queue = append(g.queue, now...)
			if mustSync {
				if err := m.log.Sync(); err != nil {
					g.t.Fatalf("member %d: sync: %v", id, err)
				}
			}
			after, err := m.rep.Complete()
			if err != nil {
				g.t.Fatalf("member %d: complete: %v", id, err)
			}
			g.queue = append(g.queue, after...)
		}
		q := g.queue
		g.queue = nil
		for _, msg := range q {
			if to := g.members[msg.To]; to != nil {
				busy = true
				_ = to.rep.raft.Step(msg)
			}
		}
		if !busy {
			return
		}
	}
}

func (g *group) propose(m *member, n int) {
	g.t.Helper()
	for i := 0; i < n; i++ {
		if _, _, err := m.rep.raft.Propose(EntryBatch+1, []byte(fmt.Sprintf("e%d", i))); err != nil {
			g.t.Fatalf("propose: %v", err)
		}
	}
	g.pump()
}

// checkApplied: entries reach the application in index order, each once,
// ending at Applied.
func checkApplied(t *testing.T, m *member, from uint64) {
	t.Helper()
	for i, e := range m.sm.applied {
		if e.Index != from+uint64(i) {
			t.Fatalf("member %d: applied entry %d at position %d, want index %d", m.id, e.Index, i, from+uint64(i))
		}
	}
	if last := from + uint64(len(m.sm.applied)) - 1; len(m.sm.applied) > 0 && last != m.rep.Applied() {
		t.Fatalf("member %d: last applied entry %d, Applied() %d", m.id, last, m.rep.Applied())
	}
}

func TestTakeComplete(t *testing.T) {
	g := newGroup(t)
	m := g.add(1, 1)
	if m.rep.Applied() != 0 || m.rep.Busy() || !m.rep.HasWork() {
		t.Fatalf("fresh replica: applied %d busy %v work %v", m.rep.Applied(), m.rep.Busy(), m.rep.HasWork())
	}
	_, mustSync, err := m.rep.Take()
	if err != nil {
		t.Fatal(err)
	}
	if !m.rep.Busy() || m.rep.HasWork() {
		t.Fatalf("after Take: busy %v work %v", m.rep.Busy(), m.rep.HasWork())
	}
	if _, _, err := m.rep.Take(); err == nil {
		t.Fatalf("a second Take while one is in flight succeeded")
	}
	if mustSync {
		if err := m.log.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.rep.Complete(); err != nil {
		t.Fatal(err)
	}
	if m.rep.Applied() != 1 || fmt.Sprint(m.rep.Conf()) != "{[1] []}" || len(m.sm.applied) != 1 || m.sm.applied[0].Type != consensus.EntryConfChange {
		t.Fatalf("after the bootstrap entry: applied %d conf %v app %v", m.rep.Applied(), m.rep.Conf(), m.sm.applied)
	}
	if after, err := m.rep.Complete(); after != nil || err != nil {
		t.Fatalf("Complete with nothing in flight: %v, %v", after, err)
	}

	m.rep.raft.Campaign()
	g.pump()
	g.propose(m, 5)
	checkApplied(t, m, 1)
	if m.rep.Applied() != m.log.LastIndex() || m.log.DurableIndex() != m.log.LastIndex() {
		t.Fatalf("applied %d, durable %d, last %d", m.rep.Applied(), m.log.DurableIndex(), m.log.LastIndex())
	}
	// Application entries keep their type through the log.
	last := m.sm.applied[len(m.sm.applied)-1]
	if last.Type != EntryBatch+1 || string(last.Data) != "e4" {
		t.Fatalf("last applied entry %+v", last)
	}

	// Abandon drops the Ready in flight.
	if _, _, err := m.rep.raft.Propose(EntryBatch+1, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.rep.Take(); err != nil {
		t.Fatal(err)
	}
	m.rep.Abandon()
	if m.rep.Busy() {
		t.Fatalf("busy after Abandon")
	}
}

// snapshotAt records a snapshot point at the applied index, as
// node/maintain.go does, and drops the entries below it.
func snapshotAt(t *testing.T, m *member, app string) uint64 {
	t.Helper()
	i := m.rep.Applied()
	term, err := m.log.Term(i)
	if err != nil {
		t.Fatal(err)
	}
	next := m.log.OffsetAfterIndex(i)
	data := EncodeSnapshotData(SnapshotData{Conf: m.rep.Conf(), NextOffset: next, App: []byte(app)})
	if err := m.log.SetSnapshot(logstore.SnapshotMeta{Index: i, Term: term, NextOffset: next, Data: data}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.log.CompactTo(i); err != nil {
		t.Fatal(err)
	}
	return i
}

// A member added after the leader dropped its early entries is caught up
// by a snapshot: the replica installs it in the log, restores the
// application from it, and then applies the entries after it.
func TestSnapshotCatchUp(t *testing.T) {
	g := newGroup(t)
	leader := g.add(1, 1)
	g.pump()
	leader.rep.raft.Campaign()
	g.pump()
	g.propose(leader, 8)
	snap := snapshotAt(t, leader, "state")
	if f, _ := NewStorage(leader.log).FirstIndex(); f != snap+1 {
		t.Fatalf("first index %d after snapshot at %d", f, snap)
	}

	learner := g.add(2)
	if _, _, err := leader.rep.raft.ProposeConfChange(consensus.ConfChange{Type: consensus.ConfAddLearner, NodeID: 2}); err != nil {
		t.Fatal(err)
	}
	g.pump()
	g.propose(leader, 3)

	if len(learner.sm.restores) != 2 {
		t.Fatalf("learner restored %d times, want 2 (its empty start, then the snapshot)", len(learner.sm.restores))
	}
	if got := learner.sm.restores[1]; got.Index != snap || learner.sm.restoreApp[1] != "state" {
		t.Fatalf("learner restored %+v with %q, want index %d with %q", got, learner.sm.restoreApp[1], snap, "state")
	}
	if s := learner.log.Snapshot(); s.Index != snap || s.NextOffset != leader.log.Snapshot().NextOffset {
		t.Fatalf("learner log snapshot %+v, leader's %+v", s, leader.log.Snapshot())
	}
	checkApplied(t, learner, snap+1)
	if learner.rep.Applied() != leader.rep.Applied() {
		t.Fatalf("learner applied %d, leader %d", learner.rep.Applied(), leader.rep.Applied())
	}
	if want := "{[1] [2]}"; fmt.Sprint(learner.rep.Conf()) != want || fmt.Sprint(leader.rep.Conf()) != want {
		t.Fatalf("membership: learner %v, leader %v; want %s", learner.rep.Conf(), leader.rep.Conf(), want)
	}
	// The learner's entries after the snapshot are the leader's.
	for _, e := range learner.sm.applied {
		les, err := leader.log.Entries(e.Index, e.Index+1, -1)
		if err != nil || len(les) != 1 {
			t.Fatalf("leader entry %d: %v", e.Index, err)
		}
		if le := FromLog(les[0]); le.Term != e.Term || le.Type != e.Type || string(le.Data) != string(e.Data) {
			t.Fatalf("entry %d: learner %+v, leader %+v", e.Index, e, le)
		}
	}
}

// A restart restores from the log's snapshot point and applies the
// entries after it again, and only those.
func TestRestartFromSnapshot(t *testing.T) {
	g := newGroup(t)
	m := g.add(1, 1)
	g.pump()
	m.rep.raft.Campaign()
	g.pump()
	g.propose(m, 4)
	snap := snapshotAt(t, m, "at-snap")
	g.propose(m, 3)
	applied := m.rep.Applied()

	g.restart(m)
	if m.rep.Applied() != snap || len(m.sm.restores) != 1 || m.sm.restores[0].Index != snap || m.sm.restoreApp[0] != "at-snap" {
		t.Fatalf("after restart: applied %d, restores %+v %q; want snapshot %d", m.rep.Applied(), m.sm.restores, m.sm.restoreApp, snap)
	}
	if fmt.Sprint(m.rep.Conf()) != "{[1] []}" {
		t.Fatalf("membership after restart %v", m.rep.Conf())
	}
	// The commit index may come back older than it was (logstore
	// HardState), so what is applied again without a leader may stop
	// short; a new leader's first entry commits the rest. (A restarted
	// member campaigns only after an election timeout: consensus keeps
	// its lease promises.)
	g.pump()
	for range 10 {
		m.rep.raft.Tick()
	}
	m.rep.raft.Campaign()
	g.pump()
	checkApplied(t, m, snap+1)
	if m.rep.Applied() != applied+1 {
		t.Fatalf("applied %d after restart and election, want %d (everything before and the new leader's entry)", m.rep.Applied(), applied+1)
	}
}

func TestRestoreErrorStopsNew(t *testing.T) {
	g := newGroup(t)
	m := g.add(1, 1)
	boom := errors.New("boom")
	sm := &appSM{restoreErr: boom}
	if _, err := New(Config{Group: 16, Raft: raftConfig(1)}, m.log, sm); !errors.Is(err, boom) {
		t.Fatalf("New with a failing Restore: %v", err)
	}
}
