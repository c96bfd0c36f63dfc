package node

import (
	"errors"
	"fmt"
	"slices"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/internal/plant"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/replica"
)

// Frame kinds on the node-to-node transport.
const (
	frameRaft = 1 // a consensus.Host frame
	frameRPC  = 2 // a node RPC (rpc.go)
)

// process walks every group's Ready through its obligations (visiting only
// the groups that may have one or are Busy: workset.go):
//
//  1. take it: the log write happens now (not synced), messages that may go
//     before the fsync are queued;
//  2. a Ready that needs no fsync completes at once (unless Readys taken
//     before it are still in flight: it then completes after them, in
//     order); the others wait for the next round of fsyncs. Up to
//     Config.SyncPipeline rounds are in flight at a time (pipelined group
//     commit, issue 21): a write that arrives while a round runs starts
//     the next round at once instead of waiting for the first to end, and
//     every write that arrives while the pipeline is full shares the next
//     round (group commit);
//  3. rounds complete in the order they started, whatever order the disk
//     reports them in (completeRounds): when a round completes, each of
//     its Readys completes: its after-persist messages go out and its
//     committed entries are applied. A leader's entries that a quorum
//     commits while its Ready is in flight are applied at once
//     (replica.ApplyCommittedBusy), not after the round.
func (r *Reactor) process() {
	r.processQueued = false
	if r.stopped {
		return
	}
	// Only the groups that may have work (workset.go), in group order.
	r.work.begin(r.groupIDs())
	i := 0
	for {
		g, ok := r.work.nextGroup(&i)
		if !ok {
			break
		}
		r.stats.ProcessVisits++
		r.work.visited(g, r.processGroup(g))
		if r.stopped {
			r.work.end()
			return
		}
	}
	r.work.end()
	r.checkWorkSet()
	r.startSync()
	r.reapDoomed()
	r.flush()
}

// processGroup does one pass's work for group g; it reports whether g may
// still have work (it is Busy, or a Ready was just taken).
func (r *Reactor) processGroup(g uint64) bool {
	rep := r.replicaOf(g)
	if rep == nil {
		return false
	}
	if rep.Busy() {
		// A leader waiting for its fsync round still applies what a
		// quorum committed meanwhile (replica.ApplyCommittedBusy).
		if rep.ApplyCommittedBusy() {
			r.afterApply(g)
		}
		// With a pipeline, the next Ready may be written meanwhile.
		if rep.HasWork() {
			r.take(consensus.GroupID(g), rep)
		}
		return true
	}
	if !rep.HasWork() {
		return false
	}
	r.take(consensus.GroupID(g), rep)
	return true
}

func (r *Reactor) take(g consensus.GroupID, rep *replica.Replica) {
	now, mustSync, err := rep.Take()
	if err == nil {
		err = rep.Err()
	}
	if errors.Is(err, replica.ErrDamagedWrite) {
		// Damage, an injected or real fault the broker survives: the
		// replica is stalled and repaired from its peers (repair.go)
		// once the Readys before this one are complete.
		r.env.Logf("node %d: group %d: %v; repairing it from its peers", r.self, g, err)
		return
	}
	if err != nil {
		r.fatal(fmt.Errorf("group %d: %w", g, err))
		return
	}
	r.countSnapshots(now)
	r.host.Enqueue(g, now)
	r.observeRole(uint64(g), rep)
	if rss := rep.TakeReadStates(); len(rss) > 0 {
		r.observeReadStates(uint64(g), rss)
	}
	r.afterApply(uint64(g)) // Take may have applied entries already durable
	// The durable fence record follows Raft's fence within this pass, not
	// at the next tick: before this Ready's messages are flushed.
	r.fenceRecordFollows(uint64(g))
	if rep.InFlight() > 1 {
		// Readys taken before it are in flight: it completes after them,
		// in order (Raft's Advance order), with the next round, whether or
		// not it needs an fsync of its own.
		r.waiting = append(r.waiting, rep)
		return
	}
	if !mustSync || plant.Enabled(plant.AckBeforeFsync) {
		r.complete(g, rep)
		if plant.Enabled(plant.AckBeforeFsync) && mustSync {
			// The planted bug: acknowledge, and let the fsync come later.
			r.waitingSyncOnly(rep)
		}
		return
	}
	r.waiting = append(r.waiting, rep)
}

// waitingSyncOnly queues a background sync for a replica whose Ready was
// already completed (only reachable with the ack-before-fsync planted bug).
func (r *Reactor) waitingSyncOnly(rep *replica.Replica) {
	if plan := rep.PrepareSync(); plan != nil {
		// A round of its own, completed in order like every round.
		rd := &syncRound{plans: []*logstore.SyncPlan{plan}, owners: []*replica.Replica{rep}}
		r.rounds = append(r.rounds, rd)
		r.env.Disk.Sync(rd.plans, func(err error) { r.roundReported(rd, err) })
	}
}

func (r *Reactor) complete(g consensus.GroupID, rep *replica.Replica) {
	after, err := rep.Complete()
	if err != nil {
		r.fatal(fmt.Errorf("group %d: %w", g, err))
		return
	}
	r.countSnapshots(after)
	r.host.Enqueue(g, after)
	r.afterApply(uint64(g))
	// And once its entries are durable.
	r.fenceRecordFollows(uint64(g))
	if rep.Drained() {
		r.drained = append(r.drained, uint64(g))
	}
}

// fenceRecordFollows brings a fenced group's durable fence record up to its
// Raft's fence after each Ready (liftFence), so that a crash never brings
// the replica back under a fence its Raft had already turned into the
// leader's log end or lifted (sim seed 1072293, --all-faults).
func (r *Reactor) fenceRecordFollows(g uint64) {
	r.liftFence(g)
}

// idleWork runs, for the replicas a round drained (replica.Quiet stopped
// their pipeline), the work that needs them idle and found them busy:
// retention and compaction, the controller's snapshot, a repair, a
// removal. It runs after the round's Readys completed, before the next
// Take, so such work is not starved by a pipeline always in flight.
func (r *Reactor) idleWork() {
	gs := r.drained
	r.drained = nil
	for _, g := range gs {
		rep := r.replicaOf(g)
		if rep == nil || rep.Busy() {
			continue
		}
		if g == controller.ControllerGroup {
			r.ctl.maybeSnapshot()
		} else if p := r.parts[g]; p != nil {
			r.maintainPart(p, r.env.Clock.Now())
		}
		if rep.Damaged() && !rep.SyncInFlight() {
			if err := r.repair(g); err != nil {
				r.env.Logf("node %d: repair group %d: %v", r.self, g, err)
			}
		}
		if r.stopped {
			return
		}
	}
	if len(gs) > 0 {
		r.reapDoomed()
	}
}

// countSnapshots counts the Raft snapshots among a Ready's messages
// (Stats.RaftSnapshotsSent), for operators and the simulator's coverage.
func (r *Reactor) countSnapshots(msgs []consensus.Message) {
	for i := range msgs {
		if msgs[i].Type == consensus.MsgSnap {
			r.stats.RaftSnapshotsSent++
		}
	}
}

// syncRound is one round of fsyncs in flight: the Readys it completes
// (batch, a replica once per Ready), the plans it runs and their owners.
type syncRound struct {
	batch  []*replica.Replica
	plans  []*logstore.SyncPlan
	owners []*replica.Replica
	// only: replicas synced without a Ready (syncOnly, wantSync).
	only   []*replica.Replica
	traces []traceSync // traced produces' fsync stages ending with it
	done   bool        // the disk reported it
	err    error
}

// syncPipeline is how many rounds may be in flight.
func (r *Reactor) syncPipeline() int {
	return min(max(r.cfg.SyncPipeline, 1), logstore.PlansInFlightMax)
}

// startSync begins a round of fsyncs for every waiting replica and every
// replica whose log changed without a Ready (syncOnly: a retention step's
// new snapshot point, whose dropped segment files go once it is durable),
// unless the pipeline's rounds are in flight already. A replica whose log
// cannot prepare a plan now (logstore's SyncBlocked: a meta record waits
// for the one in flight) stays waiting for a later round, with all its
// Readys.
func (r *Reactor) startSync() {
	if len(r.rounds) >= r.syncPipeline() || len(r.waiting) == 0 && len(r.syncOnly) == 0 {
		return
	}
	var batch, keep []*replica.Replica
	plans := make([]*logstore.SyncPlan, 0, len(r.waiting))
	owners := make([]*replica.Replica, 0, len(r.waiting))
	blocked := map[*replica.Replica]bool{}
	prepared := map[*replica.Replica]bool{}
	for _, rep := range r.waiting {
		if blocked[rep] || !prepared[rep] && rep.SyncBlocked() {
			blocked[rep] = true
			keep = append(keep, rep)
			continue
		}
		batch = append(batch, rep)
		if prepared[rep] {
			continue // its earlier Ready's plan covers this one too
		}
		prepared[rep] = true
		p := rep.PrepareSync()
		if err := rep.Err(); err != nil {
			// A write failed (possibly one flushed for a read): what Raft
			// believes is written may not be. Nothing of it may be
			// acknowledged; the node stops and recovers from the disk.
			r.fatal(fmt.Errorf("group %d: %w", rep.Group, err))
			return
		}
		if p != nil {
			plans = append(plans, p)
			owners = append(owners, rep)
		}
	}
	r.waiting = keep
	var only, onlyKeep []*replica.Replica
	for _, rep := range r.syncOnly {
		if r.replicaOf(uint64(rep.Group)) != rep {
			continue // closed since (deleted, or reopened by a repair)
		}
		if prepared[rep] {
			continue // its plan in this round covers the change
		}
		if blocked[rep] || rep.SyncBlocked() {
			onlyKeep = append(onlyKeep, rep)
			continue
		}
		// nil when nothing is left to sync (a plan in flight covers it).
		if p := rep.PrepareSync(); p != nil {
			plans = append(plans, p)
			owners = append(owners, rep)
			only = append(only, rep)
		}
	}
	r.syncOnly = onlyKeep
	if len(batch) == 0 && len(plans) == 0 {
		return
	}
	rd := &syncRound{batch: batch, plans: plans, owners: owners, only: only}
	r.rounds = append(r.rounds, rd)
	if len(r.traceSync.waiting) > 0 {
		rd.traces = r.traceSync.roundStarted(r.env.Clock.Now())
	}
	r.stats.SyncRounds++
	if len(r.rounds) > 1 {
		r.stats.SyncRoundsPipelined++
	}
	r.env.Disk.Sync(plans, func(err error) { r.roundReported(rd, err) })
}

// wantSync queues a sync of rep's log in the next round although it has no
// Ready: maintain's retention step set a new snapshot point, and the
// segment files it dropped are removed only once that is durable
// (logstore/sync.go). Without it a partition that takes no more writes
// would keep the files for ever.
func (r *Reactor) wantSync(rep *replica.Replica) {
	if !slices.Contains(r.syncOnly, rep) {
		r.syncOnly = append(r.syncOnly, rep)
	}
	r.queueProcess()
}

// roundReported records that the disk finished round rd (with err) and
// completes what is complete, in order.
func (r *Reactor) roundReported(rd *syncRound, err error) {
	rd.done, rd.err = true, err
	r.completeRounds()
}

// completeRounds completes, oldest first, every round the disk has
// reported, stopping at the first one still running: round N+1's Readys
// never complete (nor are their logs told their plans finished) before
// round N's, whatever order the disk answers in.
func (r *Reactor) completeRounds() {
	for len(r.rounds) > 0 && r.rounds[0].done {
		rd := r.rounds[0]
		r.rounds[0] = nil
		r.rounds = r.rounds[1:]
		for i, p := range rd.plans {
			rd.owners[i].FinishSync(p, rd.err)
		}
		r.syncDone(rd)
		if r.stopped {
			return
		}
	}
}

func (r *Reactor) syncDone(rd *syncRound) {
	if r.stopped {
		return
	}
	if rd.err != nil {
		r.fatal(fmt.Errorf("fsync: %w", rd.err))
		return
	}
	if len(rd.traces) > 0 {
		roundDone(rd.traces, r.env.Clock.Now())
	}
	for _, rep := range rd.batch {
		r.complete(rep.Group, rep)
		if r.stopped {
			return
		}
	}
	r.idleWork()
	if r.stopped {
		return
	}
	// The plan just finished removed the dropped files; the next round
	// makes the removals durable (their directory's fsync). A replica
	// leaves syncOnly when its PrepareSync has nothing left.
	for _, rep := range rd.only {
		r.wantSync(rep)
	}
	if r.opensAfterSync {
		r.opensAfterSync = false
		r.openingAfterSync = true
		r.reconcile() // opens the next few replicas (controller.go openSome)
		r.openingAfterSync = false
	}
	r.queueProcess()
}

// flush sends every queued Raft message, one frame per peer. The host
// writes the frame's type byte in front of each frame, so a frame (tens of
// megabytes to a follower under load) is not copied again to add it.
func (r *Reactor) flush() {
	for _, out := range r.host.FlushPrefixed(raftFramePrefix[:]) {
		r.env.Net.Send(netx.NodeID(out.To), out.Frame)
	}
}

// raftFramePrefix is the header of every Raft frame the reactor sends.
var raftFramePrefix = [1]byte{frameRaft}
