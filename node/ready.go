package node

import (
	"fmt"
	"slices"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/internal/plant"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
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
//  2. a Ready that needs no fsync completes at once; the others wait for the
//     next round of fsyncs, and only one round is in flight at a time, so
//     every write that arrives during a round shares the next one (group
//     commit);
//  3. when a round completes, each Ready completes: its after-persist
//     messages go out and its committed entries are applied. A leader's
//     entries that a quorum commits while its Ready is in flight are
//     applied at once (replica.ApplyCommittedBusy), not after the round.
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
		r.env.Disk.Sync([]*logstore.SyncPlan{plan}, func(err error) { rep.FinishSync(plan, err) })
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
}

// fenceRecordFollows brings a fenced group's durable fence record up to its
// Raft's fence after each Ready (liftFence), so that a crash never brings
// the replica back under a fence its Raft had already turned into the
// leader's log end or lifted (sim seed 1072293, --all-faults).
func (r *Reactor) fenceRecordFollows(g uint64) {
	r.liftFence(g)
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

// startSync begins a round of fsyncs for every waiting replica and every
// replica whose log changed without a Ready (syncOnly: a retention step's
// new snapshot point, whose dropped segment files go once it is durable),
// unless a round is in flight already.
func (r *Reactor) startSync() {
	if r.syncing || len(r.waiting) == 0 && len(r.syncOnly) == 0 {
		return
	}
	batch, only := r.waiting, r.syncOnly
	r.waiting, r.syncOnly = nil, nil
	plans := make([]*logstore.SyncPlan, 0, len(batch)+len(only))
	owners := make([]*replica.Replica, 0, len(batch)+len(only))
	for _, rep := range batch {
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
	var onlyRound []*replica.Replica
	for _, rep := range only {
		if r.replicaOf(uint64(rep.Group)) != rep {
			continue // closed since (deleted, or reopened by a repair)
		}
		// nil when nothing is left to sync, or when the replica also
		// waits with a Ready and its plan above covers the change.
		if p := rep.PrepareSync(); p != nil {
			plans = append(plans, p)
			owners = append(owners, rep)
			onlyRound = append(onlyRound, rep)
		}
	}
	if len(batch) == 0 && len(plans) == 0 {
		return
	}
	r.syncing = true
	r.syncBatch = batch
	r.syncOnlyBatch = onlyRound
	if len(r.traceSync.waiting) > 0 {
		r.traceSync.roundStarted(r.env.Clock.Now())
	}
	r.stats.SyncRounds++
	r.env.Disk.Sync(plans, func(err error) {
		for i, p := range plans {
			owners[i].FinishSync(p, err)
		}
		r.syncDone(err)
	})
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

func (r *Reactor) syncDone(err error) {
	if r.stopped {
		return
	}
	if err != nil {
		r.fatal(fmt.Errorf("fsync: %w", err))
		return
	}
	batch, only := r.syncBatch, r.syncOnlyBatch
	r.syncBatch, r.syncOnlyBatch = nil, nil
	r.syncing = false
	if len(r.traceSync.round) > 0 {
		r.traceSync.roundDone(r.env.Clock.Now())
	}
	for _, rep := range batch {
		r.complete(rep.Group, rep)
		if r.stopped {
			return
		}
	}
	// The plan just finished removed the dropped files; the next round
	// makes the removals durable (their directory's fsync). A replica
	// leaves syncOnly when its PrepareSync has nothing left.
	for _, rep := range only {
		r.wantSync(rep)
	}
	if r.opensAfterSync {
		r.opensAfterSync = false
		r.reconcile() // opens the next few replicas (controller.go openSome)
	}
	r.queueProcess()
}

// flush sends every queued Raft message, one frame per peer.
func (r *Reactor) flush() {
	for _, out := range r.host.Flush() {
		frame := make([]byte, 0, len(out.Frame)+1)
		frame = append(frame, frameRaft)
		frame = append(frame, out.Frame...)
		r.env.Net.Send(netx.NodeID(out.To), frame)
	}
}
