package replica

import (
	"testing"

	"github.com/floe-broker/floe/consensus"
)

// leaderPipeline returns a single-member group's leader with a pipeline of
// two Readys.
func leaderPipeline(t *testing.T) (*group, *member) {
	g := newGroup(t)
	m := g.add(1, 1)
	m.rep.pipeline = 2
	m.rep.raft.SetPipeline(2)
	for i := 0; i < 50 && m.rep.raft.BasicStatus().RaftState != consensus.StateLeader; i++ {
		m.rep.raft.Tick()
		g.pump()
	}
	if m.rep.raft.BasicStatus().RaftState != consensus.StateLeader {
		t.Fatal("no leader")
	}
	return g, m
}

// Two Readys in flight: the second is written while the first's sync is
// in flight; their plans finish in order; the leader's commit index moves
// only when a Ready completes (its own durable match); entries are applied
// once each, in index order.
func TestPipelinedReadysCompleteInOrder(t *testing.T) {
	_, m := leaderPipeline(t)
	rep := m.rep
	base := rep.raft.BasicStatus().Commit
	from := rep.Applied() + 1
	m.sm.applied = nil
	a, _, err := rep.Propose(consensus.EntryNormal, []byte("a"))
	must(t, err)
	if _, mustSync, err := rep.Take(); err != nil || !mustSync {
		t.Fatalf("take 1: %v %v", mustSync, err)
	}
	p1 := m.log.PrepareSync()
	b, _, err := rep.Propose(consensus.EntryNormal, []byte("b"))
	must(t, err)
	if !rep.HasWork() {
		t.Fatal("no second Ready with a pipeline of 2")
	}
	if _, _, err := rep.Take(); err != nil {
		t.Fatalf("take 2: %v", err)
	}
	p2 := m.log.PrepareSync()
	if p1 == nil || p2 == nil {
		t.Fatal("two plans wanted")
	}
	_, _, err = rep.Propose(consensus.EntryNormal, []byte("c"))
	must(t, err)
	if rep.HasWork() {
		t.Fatal("a third Ready offered with two in flight")
	}
	if _, _, err := rep.Take(); err == nil {
		t.Fatal("a third Take accepted with two in flight")
	}
	// The disk finishes plan 2 first; the caller still completes in order.
	must(t, p2.Run())
	must(t, p1.Run())
	if c := rep.raft.BasicStatus().Commit; c != base {
		t.Fatalf("commit %d before any Complete, want %d", c, base)
	}
	m.log.FinishSync(p1, nil)
	_, err = rep.Complete()
	must(t, err)
	if c := rep.raft.BasicStatus().Commit; c != a {
		t.Fatalf("commit %d after Ready 1, want %d", c, a)
	}
	m.log.FinishSync(p2, nil)
	_, err = rep.Complete()
	must(t, err)
	if c := rep.raft.BasicStatus().Commit; c != b {
		t.Fatalf("commit %d after Ready 2, want %d", c, b)
	}
	for rep.HasWork() {
		_, mustSync, err := rep.Take()
		must(t, err)
		if mustSync {
			must(t, m.log.Sync())
		}
		_, err = rep.Complete()
		must(t, err)
	}
	checkApplied(t, m, from)
	if rep.Applied() < b {
		t.Fatalf("applied %d, want at least %d", rep.Applied(), b)
	}
}

// Quiet stops the pipeline of a busy replica until it drains: one Ready
// at a time, and Drained reports the moment it is idle.
func TestQuietDrainsThePipeline(t *testing.T) {
	_, m := leaderPipeline(t)
	rep := m.rep
	_, _, err := rep.Propose(consensus.EntryNormal, []byte("a"))
	must(t, err)
	_, _, err = rep.Take()
	must(t, err)
	if rep.Quiet() {
		t.Fatal("quiet with a Ready in flight")
	}
	_, _, err = rep.Propose(consensus.EntryNormal, []byte("b"))
	must(t, err)
	if rep.HasWork() {
		t.Fatal("a second Ready offered while draining for Quiet")
	}
	must(t, m.log.Sync())
	_, err = rep.Complete()
	must(t, err)
	if !rep.Drained() || rep.Drained() {
		t.Fatal("Drained should report the drain once")
	}
	if !rep.Quiet() || !rep.HasWork() {
		t.Fatal("the pipeline did not resume after the drain")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
