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
	// ckpt: the replica keeps its membership checkpoint (confcheckpoint.go)
	// beside its log, as node's replicas do.
	ckpt bool
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
// newLedGroup makes a group of three members 1, 2 and 3, and has member
// 1 campaign; the caller checks the election where it matters.
func newLedGroup(t *testing.T) (*group, *member, *member, *member) {
	g := newGroup(t)
	m1, m2, m3 := g.add(1, 1, 2, 3), g.add(2, 1, 2, 3), g.add(3, 1, 2, 3)
	g.pump()
	m1.rep.raft.Campaign()
	g.pump()
	return g, m1, m2, m3
}

func (g *group) add(id uint64, voters ...uint64) *member {
	m := &member{id: id, fs: logstore.NewSimFS(rand.New(rand.NewSource(int64(id)))), sm: &appSM{}}
	g.members[id] = m
	g.bootstrap(m, voters...)
	return m
}

// bootstrap starts member m on a new log; voters, if any, bootstrap the
// group.
func (g *group) bootstrap(m *member, voters ...uint64) {
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
	cfg := Config{Group: 16, Raft: rc}
	if m.ckpt {
		cfg.FS, cfg.Dir = m.fs, "g"
	}
	rep, err := New(cfg, log, m.sm)
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

// settle walks member m's Readies (take, sync, complete) until it has no
// work and returns the messages it sent.
// acknowledge delivers the leader's messages to the followers, settles
// each follower, and steps their answers to the leader back into it.
func (g *group) acknowledge(leader *member, toFollowers []consensus.Message, followers ...*member) {
	for _, msg := range toFollowers {
		if f := g.members[msg.To]; f != nil && msg.To != leader.id {
			_ = f.rep.raft.Step(msg)
		}
	}
	var answers []consensus.Message
	for _, f := range followers {
		for _, msg := range g.settle(f) {
			if msg.To == leader.id {
				answers = append(answers, msg)
			}
		}
	}
	for _, msg := range answers {
		_ = leader.rep.raft.Step(msg)
	}
}

func (g *group) settle(m *member) []consensus.Message {
	g.t.Helper()
	var out []consensus.Message
	for m.rep.HasWork() {
		now, _, err := m.rep.Take()
		if err != nil {
			g.t.Fatal(err)
		}
		if err := m.log.Sync(); err != nil {
			g.t.Fatal(err)
		}
		after, err := m.rep.Complete()
		if err != nil {
			g.t.Fatal(err)
		}
		out = append(append(out, now...), after...)
	}
	return out
}

// TestApplyCommittedBusy: a leader whose next Ready is in flight (its
// fsync round not done) applies an entry the followers' acknowledgements
// commit meanwhile, at once; a replica with nothing in flight does not,
// nor a follower with nothing newly committed; and every entry still
// reaches the application once, in order, when the rounds complete. (The
// leader-only rule itself is not exercised here: a follower's commit
// index moves only through the leader's next Ready.)
func TestApplyCommittedBusy(t *testing.T) {
	g, m1, m2, m3 := newLedGroup(t)
	if m1.rep.BasicStatus().RaftState != consensus.StateLeader {
		t.Fatalf("member 1 is not the leader")
	}
	// E1: written and durable on the leader, not yet on the followers.
	e1, _, err := m1.rep.Propose(EntryBatch+1, []byte("e1"))
	if err != nil {
		t.Fatal(err)
	}
	toFollowers := g.settle(m1)
	if m1.rep.ApplyCommittedBusy() {
		t.Fatalf("applied with no Ready in flight")
	}
	// E2: taken, its fsync round not done: the leader is busy.
	if _, _, err := m1.rep.Propose(EntryBatch+1, []byte("e2")); err != nil {
		t.Fatal(err)
	}
	now, _, err := m1.rep.Take()
	if err != nil {
		t.Fatal(err)
	}
	if !m1.rep.Busy() {
		t.Fatal("leader not busy after Take")
	}
	// The followers take E1 and acknowledge it.
	g.acknowledge(m1, toFollowers, m2, m3)
	if c := m1.rep.BasicStatus().Commit; c < e1 {
		t.Fatalf("commit %d after the acknowledgements, want >= %d", c, e1)
	}
	for _, e := range m1.sm.applied {
		if e.Index == e1 {
			t.Fatalf("E1 applied before ApplyCommittedBusy")
		}
	}
	if !m1.rep.ApplyCommittedBusy() {
		t.Fatalf("busy leader did not apply the committed E1")
	}
	if got := m1.sm.applied[len(m1.sm.applied)-1]; got.Index != e1 || string(got.Data) != "e1" || m1.rep.Applied() != e1 {
		t.Fatalf("last applied %d %q, Applied %d; want E1 at %d", got.Index, got.Data, m1.rep.Applied(), e1)
	}
	if m1.rep.ApplyCommittedBusy() {
		t.Fatalf("applied again with nothing new committed")
	}
	// Follower 2 takes E2; it has nothing newly committed to apply.
	for _, msg := range now {
		if msg.To == 2 {
			_ = m2.rep.raft.Step(msg)
		}
	}
	if m2.rep.HasWork() {
		if _, _, err := m2.rep.Take(); err != nil {
			t.Fatal(err)
		}
		if m2.rep.ApplyCommittedBusy() {
			t.Fatalf("a follower applied early")
		}
		if err := m2.log.Sync(); err != nil {
			t.Fatal(err)
		}
		after, err := m2.rep.Complete()
		if err != nil {
			t.Fatal(err)
		}
		g.queue = append(g.queue, after...)
	}
	// The leader's round completes; everything settles; each entry was
	// applied once, in order, on every member.
	if err := m1.log.Sync(); err != nil {
		t.Fatal(err)
	}
	after, err := m1.rep.Complete()
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range now {
		if msg.To != 2 {
			g.queue = append(g.queue, msg)
		}
	}
	g.queue = append(g.queue, after...)
	g.pump()
	for _, m := range []*member{m1, m2, m3} {
		checkApplied(t, m, 1)
		if m.rep.Applied() != m1.log.LastIndex() {
			t.Fatalf("member %d applied %d, leader's last index %d", m.id, m.rep.Applied(), m1.log.LastIndex())
		}
	}
}

// TestDurableAgreedIndexBelowReplacedTail: a deposed leader holds its own
// uncommitted tail durably; a new leader's append replaces it and commits
// over it. Until the next Take truncates the log, Raft's commit covers the
// new entries while the durable ones at those indexes are the old ones:
// DurableAgreedIndex stops below them (sim seeds 912108 and 913181, where
// the simulator's acknowledged-entries-unfenced invariant took the old
// tail for committed entries the replica held).
func TestDurableAgreedIndexBelowReplacedTail(t *testing.T) {
	g := newGroup(t)
	m1 := g.add(1, 1, 2, 3)
	g.add(2, 1, 2, 3)
	g.add(3, 1, 2, 3)
	g.pump()
	m1.rep.raft.Campaign()
	g.pump()
	g.propose(m1, 2)
	st := m1.rep.BasicStatus()
	agreed, term := st.Commit, st.Term
	if m1.rep.LastIndex() != agreed {
		t.Fatalf("last %d, commit %d: want a settled group", m1.rep.LastIndex(), agreed)
	}
	// Two entries the deposed leader alone makes durable.
	for i := 0; i < 2; i++ {
		if _, _, err := m1.rep.Propose(EntryBatch+1, []byte("old")); err != nil {
			t.Fatal(err)
		}
	}
	g.settle(m1)
	if d := m1.rep.DurableIndex(); d != agreed+2 {
		t.Fatalf("durable %d, want %d", d, agreed+2)
	}
	// The new leader's append: one entry of a later term at agreed+1,
	// committed.
	app := consensus.Message{Type: consensus.MsgApp, From: 2, To: 1, Term: term + 1, LogTerm: term, Index: agreed,
		Entries: []consensus.Entry{{Term: term + 1, Index: agreed + 1, Type: EntryBatch + 1, Data: []byte("new")}}, Commit: agreed + 1}
	if err := m1.rep.raft.Step(app); err != nil {
		t.Fatal(err)
	}
	if c := m1.rep.BasicStatus().Commit; c != agreed+1 {
		t.Fatalf("commit %d after the append, want %d", c, agreed+1)
	}
	if d, a := m1.rep.DurableIndex(), m1.rep.DurableAgreedIndex(); d != agreed+2 || a != agreed {
		t.Fatalf("before Take: durable %d, agreed %d; want %d and %d", d, a, agreed+2, agreed)
	}
	g.settle(m1)
	if d, a := m1.rep.DurableIndex(), m1.rep.DurableAgreedIndex(); d != agreed+1 || a != agreed+1 {
		t.Fatalf("after the sync: durable %d, agreed %d; want %d", d, a, agreed+1)
	}
}

// TestSnapshotNotPastRaftApplied: a leader that applied an entry while its
// Ready was in flight (ApplyCommittedBusy) has applied past Raft, which
// hands the entry out in its next Ready, read from the log. A snapshot
// point set at the replica's applied index then made that read fail for
// ever: no Ready carried committed entries again, and the replica applied
// nothing more (sim seed 1000209, the controller group). SetSnapshot
// refuses a point past SnapshotBound; after the next Ready, the same
// point is taken, and the group keeps applying.
func TestSnapshotNotPastRaftApplied(t *testing.T) {
	g, m1, m2, m3 := newLedGroup(t)
	e1, _, err := m1.rep.Propose(EntryBatch+1, []byte("e1"))
	if err != nil {
		t.Fatal(err)
	}
	toFollowers := g.settle(m1)
	if _, _, err := m1.rep.Propose(EntryBatch+1, []byte("e2")); err != nil {
		t.Fatal(err)
	}
	now, _, err := m1.rep.Take()
	if err != nil {
		t.Fatal(err)
	}
	g.acknowledge(m1, toFollowers, m2, m3)
	if !m1.rep.ApplyCommittedBusy() || m1.rep.Applied() != e1 {
		t.Fatalf("busy leader applied %d, want E1 at %d", m1.rep.Applied(), e1)
	}
	if err := m1.log.Sync(); err != nil {
		t.Fatal(err)
	}
	after, err := m1.rep.Complete()
	if err != nil {
		t.Fatal(err)
	}
	g.queue = append(append(g.queue, now...), after...)
	if ra := m1.rep.BasicStatus().Applied; ra >= e1 || m1.rep.SnapshotBound() != ra {
		t.Fatalf("Raft applied %d, bound %d: want Raft behind E1 at %d", ra, m1.rep.SnapshotBound(), e1)
	}
	// The controller's snapshot, as ctlGroup.maybeSnapshot takes it.
	snap := func() error {
		i := m1.rep.Applied()
		term, err := m1.rep.Term(i)
		if err != nil {
			return err
		}
		data := EncodeSnapshotData(SnapshotData{Conf: m1.rep.Conf(), App: []byte("at-e1")})
		if err := m1.rep.SetSnapshot(logstore.SnapshotMeta{Index: i, Term: term, Data: data}); err != nil {
			return err
		}
		_, err = m1.rep.CompactTo(i)
		return err
	}
	if err := snap(); err == nil {
		t.Errorf("snapshot point %d set past Raft's applied %d", m1.rep.Applied(), m1.rep.BasicStatus().Applied)
	}
	g.pump()
	g.propose(m1, 2)
	last := m1.log.LastIndex()
	if st := m1.rep.BasicStatus(); m1.rep.Applied() != last || st.Applied != last {
		t.Fatalf("leader applied %d, Raft applied %d, last %d: it stopped applying", m1.rep.Applied(), st.Applied, last)
	}
	if err := snap(); err != nil {
		t.Fatalf("snapshot once Raft caught up: %v", err)
	}
	g.propose(m1, 2)
	for _, m := range []*member{m1, m2, m3} {
		if m.rep.Applied() != m1.log.LastIndex() {
			t.Fatalf("member %d applied %d, leader's last index %d", m.id, m.rep.Applied(), m1.log.LastIndex())
		}
	}
	checkApplied(t, m2, 1)
}
