package node

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/internal/plant"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/replica"
)

// EntryCommand is the Raft entry type of a controller command.
const EntryCommand = replica.EntryBatch + 8

// ctlSnapshotEvery is how many applied controller entries pass between
// snapshots of the metadata (each snapshot lets the log drop its prefix).
const ctlSnapshotEvery = 1024

// ctlGroup is this node's replica of the controller group.
type ctlGroup struct {
	r     *Reactor
	rep   *replica.Replica
	state *controller.State
	dirty bool // applied a change not yet reconciled with local replicas
	// walk: a change reconcile must walk the metadata for (anything but
	// a leader or size report, which reconcile does not read). unopened
	// is what the last walk found placed here and not yet open, in the
	// order openSome opens it: rounds of openSome take from it without
	// walking the metadata again.
	walk     bool
	unopened []placedHere

	lead       uint64
	term       uint64
	sinceSnap  int
	leaderSeen bool
}

// Restore implements replica.StateMachine.
func (c *ctlGroup) Restore(meta consensus.SnapshotMeta, sd replica.SnapshotData) error {
	st, err := controller.Restore(sd.App)
	if err != nil {
		return err
	}
	if st.ClusterID == "" {
		st.ClusterID = c.r.cfg.ClusterID
	}
	c.state = st
	c.dirty, c.walk = true, true
	c.r.metaChanges++
	c.r.stats.MetadataChanges++
	return nil
}

// Apply implements replica.StateMachine.
func (c *ctlGroup) Apply(e consensus.Entry) {
	c.sinceSnap++
	c.r.metaChanges++ // whatever the entry does: a count of possible changes
	switch e.Type {
	case EntryCommand:
		cmd, err := controller.DecodeCommand(e.Data)
		if err != nil {
			c.r.env.Logf("node %d: controller entry %d does not decode: %v", c.r.self, e.Index, err)
			return
		}
		if len(cmd.DeleteACLs) > 0 && plant.Enabled(plant.ACLDeleteMissed) && c.r.controllerLeader() != c.r.self {
			return // planted bug: a broker other than the controller's leader keeps the deleted ACLs
		}
		if cmd.AlterClientQuota != nil && plant.Enabled(plant.QuotaAlterMissed) && c.r.controllerLeader() != c.r.self {
			return // planted bug: a broker other than the controller's leader keeps its old client quotas
		}
		res := c.state.Apply(cmd)
		c.dirty = true
		if !cmd.ReportOnly() {
			c.walk = true
			c.r.stats.MetadataChanges++
		}
		if cmd.ReqID != "" {
			c.r.resolveForward(cmd.ReqID, res)
		}
		if cmd.RefuseVoterChange != nil && res.Err == nil {
			c.r.appliedVoterRefusal(cmd.RefuseVoterChange)
		}
	case consensus.EntryConfChange:
		cc, err := consensus.UnmarshalConfChange(e.Data)
		if err == nil && c.r.appliedVoterChange(cc) {
			return
		}
		if err == nil && len(cc.Context) > 0 && cc.NodeID != c.r.self {
			if res, ok := c.r.env.Net.(netx.Resolver); ok {
				res.SetPeer(netx.NodeID(cc.NodeID), string(cc.Context))
			}
		}
	}
}

// maybeSnapshot records the metadata at the applied index as the log's
// snapshot point and drops the log prefix before it.
func (c *ctlGroup) maybeSnapshot() {
	every := ctlSnapshotEvery
	if n := c.r.cfg.ControllerSnapshotEntries; n > 0 {
		every = n
	}
	early := c.sinceSnap > 0 && c.r.buggify(bugControllerSnapshotEarly)
	if c.sinceSnap < every && !early || !c.rep.Quiet() {
		return
	}
	idx := c.rep.Applied()
	if idx > c.rep.SnapshotBound() {
		// Entries applied while a Ready was in flight that Raft has not
		// handed out yet (replica.SnapshotBound): the next Ready does.
		return
	}
	term, err := c.rep.Term(idx)
	if err != nil {
		return
	}
	sd := replica.SnapshotData{Conf: c.rep.Conf(), App: c.state.Snapshot()}
	m := logstore.SnapshotMeta{Index: idx, Term: term, Data: replica.EncodeSnapshotData(sd)}
	if err := c.rep.SetSnapshot(m); err != nil {
		c.r.env.Logf("node %d: controller snapshot: %v", c.r.self, err)
		return
	}
	if _, err := c.rep.CompactTo(idx); err != nil {
		c.r.env.Logf("node %d: controller compact: %v", c.r.self, err)
	}
	c.r.wantSync(c.rep) // the dropped files go once the snapshot point is durable
	c.sinceSnap = 0
}

// controllerLeader returns the controller group's leader as this node knows
// it, or 0.
func (r *Reactor) controllerLeader() uint64 {
	if r.ctl == nil {
		return 0
	}
	return r.ctl.lead
}

// Metadata returns the applied cluster metadata (callers must not keep it
// across events).
func (r *Reactor) Metadata() *controller.State { return r.ctl.state }

// MetadataChanges counts the events that may have changed the metadata
// (controller entries applied, snapshots restored, the controller opened)
// since this Reactor was created. The metadata is the same as at an
// earlier call that returned the same count (for the same Reactor), so a
// checker may skip looking at it again; it only ever grows.
func (r *Reactor) MetadataChanges() uint64 { return r.metaChanges }

// reconcile brings the local replicas in line with the metadata: opens the
// partitions placed here, dooms those no longer placed here, refreshes
// topic configs and peer addresses. It opens at most openBatchMax replicas
// per round and schedules the next round for the rest (openSome).
func (r *Reactor) reconcile() {
	c := r.ctl
	if r.staleViewWait != 0 && c.rep.Applied() >= r.staleViewWait {
		// The metadata has caught up with a deletion that a placement
		// it showed was older than (openSome): look at it again.
		r.staleViewWait = 0
		c.dirty, c.walk = true, true
	}
	if !c.dirty {
		return
	}
	c.dirty = false
	if c.walk && !r.walkMetadata() {
		c.dirty = true // look again after the next apply
		return
	}
	r.openSome()
}

// walkMetadata is reconcile's walk of the whole metadata, once per change
// that may move replicas, configs or brokers: with 10,000 partitions a
// walk per round of openSome (two replicas each) made a restart quadratic
// in the partitions, and so did a walk per leader report, as many as the
// partitions while they elect. It sets the peers' addresses and the open
// replicas' configs, dooms the open replicas placed here no more, and
// leaves in c.unopened the ones to open. It returns false when the
// metadata was rewound by a repair and is not caught up yet.
func (r *Reactor) walkMetadata() bool {
	c := r.ctl
	st := c.state
	r.stats.ReconcileWalks++
	if res, ok := r.env.Net.(netx.Resolver); ok {
		for _, id := range st.BrokerIDs() {
			b := st.Brokers[id]
			if uint64(id) != r.self && b.RaftAddr != "" {
				res.SetPeer(netx.NodeID(id), b.RaftAddr)
			}
		}
	}
	want := map[uint64]bool{}
	var unopened []placedHere
	for _, name := range st.TopicNames() {
		t := st.Topics[name]
		r.stats.ReconcileVisits += uint64(len(t.Partitions))
		for i := range t.Partitions {
			p := &t.Partitions[i]
			rank := slices.Index(p.Replicas, int32(r.self))
			if rank < 0 && !slices.Contains(p.Target, int32(r.self)) {
				if _, open := r.parts[p.Group]; !open && (!p.Settled() || r.leftAtStart(p)) && r.holdsReplica(t, p) {
					// Placed here no more, but the group may still count
					// on this replica (a cancelled or replaced walk made
					// it a member): open it, doomed, as a broker that
					// never restarted keeps it (removalCommitted). Or
					// its removal was committed while this broker was
					// down: open it, doomed, so that reapDoomed deletes
					// it (leftAtStart).
					unopened = append(unopened, placedHere{t, p, rank, true})
				}
				continue
			}
			want[p.Group] = true
			r.undoom(p.Group) // wanted again before it was reaped
			if _, ok := r.parts[p.Group]; !ok {
				unopened = append(unopened, placedHere{t, p, rank, false})
				continue
			}
			r.refreshConfig(t, p)
		}
	}
	if c.rep.Applied() < r.repairs.ctlCatchUp {
		// The metadata was rewound by a repair of the controller's log
		// (repair.go): what it lacks may only not be applied yet.
		c.unopened = nil
		return false
	}
	r.repairs.ctlCatchUp = 0
	for _, g := range r.groupIDs() {
		if g != controller.ControllerGroup && !want[g] {
			r.doomed[g] = true
		}
	}
	class := func(rank int) int {
		if rank < 0 {
			return 1 << 20 // a reassignment's new replica: after every initial one
		}
		return rank
	}
	slices.SortStableFunc(unopened, func(a, b placedHere) int { return class(a.rank) - class(b.rank) })
	c.unopened, c.walk = unopened, false
	return true
}

// placedHere is a partition replica the metadata places on this broker;
// rank is this broker's position in the partition's replicas (-1: only in
// the target of a reassignment). doomed marks a replica the metadata no
// longer places here that is opened only because the partition is not
// settled and this broker's disk holds it (holdsReplica).
type placedHere struct {
	t      *controller.Topic
	p      *controller.Partition
	rank   int
	doomed bool
}

// holdsReplica reports whether this broker's disk holds a replica of p (a
// non-empty directory). A reassignment cancelled or replaced after it made
// this broker a voter leaves the broker in neither the replicas nor the
// target while the group still counts its vote and log until the walk
// back removes it. A broker that stays up keeps that replica open
// (removalCommitted); one that restarts must open it again, or the group
// loses a voter for good: seed 917077 with --corrupt --reassign ended with
// __consumer_offsets-0 at voters [1 3 5] after a cancelled move, n5
// restarted without opening its copy and n1's copy fenced, so no leader
// was ever elected and the walk back never ran. An error other than
// not-exist counts as holding it: opening reads the disk again, and a
// failure there stops the broker like any failed open.
func (r *Reactor) holdsReplica(t *controller.Topic, p *controller.Partition) bool {
	names, err := r.env.FS.List(partitionDir(r.cfg.DataDir, t.Name, p.Index, p.Group))
	if errors.Is(err, logstore.ErrNotExist) {
		return false
	}
	return err != nil || len(names) > 0
}

// leftAtStart reports whether p's replica directory was on this broker's
// disk when it started. A replica whose removal was committed while the
// broker was down (the partition settled without it) is never opened
// again, so reapDoomed never deletes it: its directory stays, and a
// reassignment that places the partition here again reopens that old
// incarnation, with its old membership and fences, instead of a replica
// re-created from a tombstone. Under the lost-log fence (its disk was
// replaced before) that incarnation asked the voters of its old membership
// for their term, one of which had deleted its own replica and never
// answered: it took none of the leader's messages and the move never
// finished (sim seed 1529547 with --all-faults). walkMetadata opens such a
// replica doomed, and reapDoomed deletes it, leaving its tombstone. Only
// directories there at the start are looked at (one listing, not one per
// settled partition per walk): a running broker deletes the replicas it
// no longer holds itself.
//
// Only metadata known to be fresh counts: a restarted broker replays its
// controller log from an older commit index, and an earlier settled
// removal it replays may since have been undone by a move that placed the
// partition here again. Deleting the replica then deleted a current
// voter's log (sim seeds 1730151 and 1730907 with --all-faults: the group
// lost the acknowledged entries that replica held, or the quorum it
// counted on, and never recovered). So leftAtStart is false until a
// metadata barrier asked for at the start has passed (startMetadataFresh):
// the metadata then holds every change committed before the broker came
// back, and a removal it shows settled is the current placement.
func (r *Reactor) leftAtStart(p *controller.Partition) bool {
	return r.startFresh && r.heldAtStart[p.Group]
}

// startMetadataFresh runs once the metadata holds everything the
// controller had committed when the broker started: the replicas left on
// disk by removals settled while it was down may now be deleted
// (leftAtStart), so the metadata is walked again.
func (r *Reactor) startMetadataFresh() {
	r.startFresh = true
	r.ctl.dirty, r.ctl.walk = true, true
	r.queueReconcile(0)
}

// listHeldAtStart lists the replica directories the data directory holds
// now, at the start (leftAtStart). A failed listing fails the start, as a
// failed read of the data directory does: a broker that could not tell
// which replicas it holds would leave some on disk.
func (r *Reactor) listHeldAtStart() error {
	names, err := r.env.FS.List(path.Join(r.cfg.DataDir, "partitions"))
	if err != nil && !errors.Is(err, logstore.ErrNotExist) {
		return fmt.Errorf("node: list the replicas: %w", err)
	}
	r.heldAtStart = make(map[uint64]bool, len(names))
	for _, n := range names {
		// A replica's directory is <topic>-<index>-<group> (partitionDir);
		// a tombstone beside it (<dir>.tomb) does not parse.
		if g, err := strconv.ParseUint(n[strings.LastIndexByte(n, '-')+1:], 10, 64); err == nil {
			r.heldAtStart[g] = true
		}
	}
	return nil
}

// openBatchMax is how many partition replicas one reconcile round opens.
// Opening one costs several fsyncs (milliseconds); a broker that applies
// the creation of hundreds of partitions must keep serving its peers
// (heartbeats, votes, the controller's commits) and clients meanwhile.
const openBatchMax = 2

// openSome opens the next openBatchMax of the replicas not yet open
// (c.unopened, from the last walk), the ones this broker is the preferred
// leader of first, then by rank: each partition's preferred replica is
// then open and campaigning by the time the others open, which is what its
// first election counts on (see campaignIfDue). It schedules another
// reconcile round for the rest. While a round of Raft fsyncs is in flight
// it opens nothing, except right after a round completed (syncDone: with
// pipelined rounds another may always be in flight under load): the creation of hundreds of partitions then goes at
// the pace of the disk, and the Raft groups already open (their heartbeats
// wait for their fsyncs) do not stall behind it long enough to lose their
// leaders. A replica opened since the walk (by a repair) is passed over
// and does not count towards the batch, as if the walk had not listed it.
func (r *Reactor) openSome() {
	c := r.ctl
	r.skipOpened()
	if len(c.unopened) == 0 {
		return
	}
	if r.diskPending() {
		// This broker's disk was replaced and its registration is not
		// applied yet: it cannot tell which groups predate it (disk.go).
		// Applying the registration reconciles again.
		c.dirty = true
		return
	}
	if len(r.rounds) > 0 && !r.openingAfterSync {
		// Opening costs fsyncs of its own: wait until this broker's round
		// is done (syncDone opens the next batch), so that the fsyncs
		// the Raft groups wait for are not queued behind them.
		c.dirty = true
		r.opensAfterSync = true
		return
	}
	for opened := 0; ; opened++ {
		r.skipOpened()
		if len(c.unopened) == 0 {
			return
		}
		if opened == openBatchMax {
			c.dirty = true
			r.queueReconcile(0)
			return
		}
		u := c.unopened[0]
		if at, stale := r.placedByStaleView(u.t, u.p); stale {
			// Deleted here by newer metadata than ours (tombstone.go):
			// wait until we have applied that far, then walk again.
			r.env.Logf("node %d: %s-%d not re-created: deleted at controller index %d, metadata at %d",
				r.self, u.t.Name, u.p.Index, at, c.rep.Applied())
			r.staleViewWait = max(r.staleViewWait, at)
			c.unopened = c.unopened[1:]
			opened--
			continue
		}
		if err := r.ensurePartition(u.t, u.p); err != nil {
			if errors.Is(err, logstore.ErrFileLimit) {
				// Out of file descriptors: nothing is lost (the log
				// closed what it had opened), so try again later
				// rather than stop the broker.
				r.stats.OpenRetries++
				r.env.Logf("node %d: %v; retrying in %v (raise the descriptor limit: ulimit -n)", r.self, err, openRetryDelay)
				c.dirty = true
				r.queueReconcile(openRetryDelay)
				return
			}
			r.fatal(err)
			return
		}
		c.unopened = c.unopened[1:]
		if u.doomed {
			r.doomed[u.p.Group] = true // reapDoomed deletes it once removed
			if u.p.Settled() {
				r.env.Logf("node %d: %s-%d reopened to be deleted: its removal from here was committed while this broker was down",
					r.self, u.t.Name, u.p.Index)
			} else {
				r.env.Logf("node %d: %s-%d reopened, though no longer placed here: the move that placed it here was cancelled or replaced, and the group may still count on it until the walk back removes it",
					r.self, u.t.Name, u.p.Index)
			}
		}
		r.refreshConfig(u.t, u.p)
	}
}

// openRetryDelay is how long a broker out of file descriptors waits
// before it tries to open its next replica again.
const openRetryDelay = time.Second

// skipOpened drops the replicas already open from the front of c.unopened.
func (r *Reactor) skipOpened() {
	c := r.ctl
	for len(c.unopened) > 0 {
		if _, open := r.parts[c.unopened[0].p.Group]; !open {
			return
		}
		c.unopened = c.unopened[1:]
	}
}

// queueReconcile schedules a reconcile round after d, unless one is
// scheduled already.
func (r *Reactor) queueReconcile(d time.Duration) {
	if !r.reconcileQueued {
		r.reconcileQueued = true
		r.env.Sched.After(d, r.reconcileMore)
	}
}

// reconcileMore runs the next reconcile round.
func (r *Reactor) reconcileMore() {
	r.reconcileQueued = false
	if r.stopped {
		return
	}
	r.reconcile()
	r.queueProcess()
}

// refreshConfig applies a topic's current configs to an open replica.
func (r *Reactor) refreshConfig(t *controller.Topic, p *controller.Partition) {
	cfg := r.topicConfig(t)
	part := r.parts[p.Group]
	part.Cfg = cfg
	part.Replica().SetSegmentLimits(cfg.SegmentBytes, segmentAge(cfg))
}

// reapDoomed deletes the local replicas of partitions no longer placed here
// (deleted topics, finished reassignments) once no Ready is in flight and
// the membership change that removed them is committed (removalCommitted),
// leaving a tombstone of their Raft state (tombstone.go), also for a
// deleted topic.
func (r *Reactor) reapDoomed() {
	for _, g := range sortedKeys(r.doomed) {
		p, ok := r.parts[g]
		if !ok {
			delete(r.doomed, g)
			continue
		}
		rep := p.Replica()
		if !rep.Quiet() || rep.SyncInFlight() || !r.removalCommitted(g, rep) {
			continue
		}
		dir := partitionDir(r.cfg.DataDir, p.Topic, p.Index, g)
		// Remember the Raft state for a later return (tombstone.go): a
		// reassignment may place the partition here again. And the
		// metadata index of the deletion: a restart that replays the
		// controller log from a commit index older than it sees the old
		// placement again, which must not re-create the replica
		// (placedByStaleView).
		if err := writeTombstone(r.env.FS, dir, rep, r.group(g).fence, r.ctl.rep.Applied()); err != nil {
			r.env.Logf("node %d: tombstone %s: %v", r.self, dir, err)
			continue
		}
		st := rep.Status()
		r.env.Logf("node %d: deleting its replica of %s-%d (group %d: term %d vote %d applied %d last %d conf %v learners %v)",
			r.self, p.Topic, p.Index, g, st.Term, st.Vote, st.Applied, st.LastIndex, st.Config.Voters, st.Config.Learners)
		p.FailWaiters(errUnknownPartition)
		r.host.Remove(consensus.GroupID(g))
		r.dropGroup(g)
		_ = rep.Close()
		if err := removeAll(r.env.FS, dir); err != nil {
			r.env.Logf("node %d: remove %s: %v", r.self, dir, err)
		} else {
			delete(r.heldAtStart, g)
		}
	}
}

// removeAll removes a log directory and its files durably. The files'
// removal is synced in the directory before the directory itself goes:
// otherwise a crash could undo the file removals, bring the directory back
// with the old log in it, and a replica re-created at the same path would
// restart on that old log and its old hard state (the simulator found a
// broker voting twice in one term this way).
func removeAll(fs logstore.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := fs.Remove(path.Join(dir, n)); err != nil {
			return err
		}
	}
	if err := fs.SyncDir(dir); err != nil {
		return err
	}
	if err := fs.Remove(dir); err != nil {
		return err
	}
	return fs.SyncDir(path.Dir(dir))
}
