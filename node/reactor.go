package node

import (
	"fmt"
	"slices"
	"time"

	"github.com/floe-broker/floe/clock"
	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/partition"
	"github.com/floe-broker/floe/node/replica"
)

// Reactor is one broker's deterministic core. Every method runs on the
// reactor's single thread (the runtime's event loop, or the simulator's).
//
// Invariants: at most syncPipeline rounds of fsyncs are in flight
// (rounds, oldest first), and they complete in that order; every replica
// in a round's batch has a Ready in flight and every replica in waiting
// has one written but not yet in a sync round; a round's only replicas
// have a plan in flight (SyncInFlight) and may have no Ready; parts and
// byName index the same partitions, and local has records only for groups
// with a local replica.
type Reactor struct {
	cfg  Config
	env  Env
	self uint64
	// diskID identifies the data directory (disk.go); freshDisk says this
	// start formatted it.
	diskID    string
	freshDisk bool
	// incarnation is this process's random id (dupid.go), drawn at Start.
	incarnation uint64
	dup         dupState // the controller leader's view of who is live (dupid.go)

	host *consensus.Host
	ctl  *ctlGroup
	// metaChanges counts the changes the metadata may have had: every
	// controller entry applied, snapshot restored or state created
	// (MetadataChanges).
	metaChanges uint64
	bal         balancerState // the controller leader's balancing (balance.go)
	// throttled: per partition group, the members whose catch-up this
	// replica limits (throttle.go).
	throttled map[uint64][]uint64
	// buggifyEnded: the simulator healed the cluster and BUGGIFY's lasting
	// effects were undone (buggify.go endLastingBuggify).
	buggifyEnded bool

	parts map[uint64]*partition.Partition // by Raft group
	// readBufs are the read buffers every log of this reactor shares
	// (logstore.Options.ReadBuffers): Env.ReadBuffers, or its own.
	readBufs *logstore.ReadBuffers
	// groupList caches groupIDs; nil when r.parts or r.ctl changed since
	// (every change goes through groupsChanged). Never written in place:
	// a caller may still be ranging over an older list.
	groupList []uint64
	byName    map[topicPartition]*partition.Partition
	doomed    map[uint64]bool // replicas to delete once idle
	// reapSeq numbers the metadata barriers a doomed replica's deletion
	// waits for (tombstone.go removalFresh).
	reapSeq uint64
	// heldAtStart: the groups whose replica directories the data
	// directory held when the broker started; see leftAtStart.
	heldAtStart map[uint64]bool
	// startFresh: a metadata barrier asked for at the start has passed,
	// so the metadata holds everything the controller had committed when
	// the broker started (leftAtStart looks only then).
	startFresh bool
	// staleViewWait is the controller index past which the metadata is
	// walked again: a replica it placed here was deleted by newer
	// metadata than it had applied (tombstone.go placedByStaleView).
	staleViewWait uint64
	// openings counts replica openings since start, so that a replica
	// deleted and created again reads as a new one (ReplicaView.Opening).
	openings uint64

	rounds  []*syncRound // fsync rounds in flight, oldest first (ready.go)
	waiting []*replica.Replica
	drained []uint64 // groups a round drained for idle work (ready.go idleWork)
	// syncOnly: replicas whose logs need a sync without a Ready (a
	// retention step's, wantSync); those in a round in flight are its only.
	syncOnly  []*replica.Replica
	traceSync traceSyncs // traced produces' fsync stages (trace.go)

	processQueued bool
	work          workSet // the groups process visits (workset.go)
	processFn     func()  // r.process, made once (queueProcess)
	stopped       bool
	ticks         uint64

	timers   deadlineQueue // request deadlines and handler timers (deadline.go)
	fetches  []*fetchWait
	creating map[string]bool // topics being auto-created

	metadataWaits   []*metadataWait // answers waiting for the metadata to change (leader_wait.go)
	reconcileQueued bool            // a reconcile round is scheduled (controller.go openSome)
	opensAfterSync  bool            // replicas wait to be opened until the fsync round ends
	// openingAfterSync: syncDone's reconcile, which opens replicas even
	// with a later round still in flight (openSome).
	openingAfterSync bool

	// local holds the reactor's own state of each local Raft group, one
	// record per group, created when its replica opens and dropped with it
	// (local.go).
	local map[uint64]*groupState

	repairs  repairs           // repairs in progress beyond one group (repair.go)
	forwards forwarder         // controller commands asked for (rpc.go)
	voters   voterChanges      // controller voter changes asked for (voters.go)
	pids     producerIDBlock   // the producer id block in hand (api_init_producer_id.go)
	reports  controllerReports // registration and leadership reports (tick.go)

	groups groupCoordinators // consumer group coordinators (coordinators.go)
	txns   txnCoordinators   // transaction coordinators and markers (txns.go)
	shares shareCoordinators // share groups (shares.go)
	users  userStore         // the SCRAM credential store's glue (users.go)

	sec security // authorization and the audit log (security.go)

	catchUp catchUp // whether the metadata caught up since start (catchup.go)
	// barriers wait for the metadata to hold what the controller had
	// committed (metabarrier.go).
	barriers metaBarriers

	stats Stats
	// telemetry is what clients pushed (KIP-714, telemetry.go).
	telemetry telemetryState
}

type topicPartition struct {
	topic     string
	partition int32
}

// New creates a reactor. Call Start to open the logs and begin ticking.
func New(cfg Config, env Env) *Reactor {
	cfg = cfg.withDefaults()
	cfg.Security = cfg.Security.withDefaults()
	if env.Logf == nil {
		env.Logf = func(string, ...any) {}
	}
	r := &Reactor{
		cfg: cfg, env: env, self: uint64(cfg.NodeID),
		host:     consensus.NewHost(uint64(cfg.NodeID)),
		parts:    map[uint64]*partition.Partition{},
		byName:   map[topicPartition]*partition.Partition{},
		doomed:   map[uint64]bool{},
		forwards: forwarder{pending: map[string]*forward{}},
		reports:  controllerReports{leaders: map[uint64]controller.LeaderReport{}},
		stats:    Stats{Requests: map[int16]uint64{}},
		timers:   deadlineQueue{queue: clock.NewDeadlines()},
		local:    map[uint64]*groupState{},
		sec:      newSecurity(cfg.Security),
		work:     newWorkSet(),
		readBufs: env.ReadBuffers,
	}
	if r.readBufs == nil {
		r.readBufs = new(logstore.ReadBuffers)
	}
	r.host.SetChanged(r.workChanged)
	return r
}

// Start opens the controller log (creating it on first boot), reopens the
// partitions the metadata assigns here, and starts the tick loop.
func (r *Reactor) Start() error {
	if err := r.env.FS.MkdirAll(r.cfg.DataDir); err != nil {
		return fmt.Errorf("node: data dir: %w", err)
	}
	if res, ok := r.env.Net.(netx.Resolver); ok {
		for _, p := range r.cfg.Peers {
			if p.ID != r.cfg.NodeID {
				res.SetPeer(netx.NodeID(p.ID), p.RaftAddr)
			}
		}
	}
	if err := r.loadDiskID(); err != nil {
		return err
	}
	r.incarnation = r.env.Rand.Uint64() | 1 // never zero: zero means "unknown"
	if err := r.listHeldAtStart(); err != nil {
		return err
	}
	if err := r.openController(); err != nil {
		return err
	}
	r.afterFreshMetadata(r.startMetadataFresh)
	r.env.Sched.After(r.cfg.TickInterval, r.tick)
	r.queueProcess()
	return nil
}

// Stop stops handling events; pending requests are failed by the runtime
// closing connections. The logs are synced and closed.
func (r *Reactor) Stop() {
	if r.stopped {
		return
	}
	r.stopped = true
	for _, g := range r.groupIDs() {
		rep := r.replicaOf(g)
		if rep != nil {
			_ = rep.Sync()
			_ = rep.Close()
		}
	}
}

// Stopped reports whether Stop or a fatal error stopped the reactor.
func (r *Reactor) Stopped() bool { return r.stopped }

// fatal stops the node: it must not go on after losing track of durability.
func (r *Reactor) fatal(err error) {
	if r.stopped {
		return
	}
	r.stopped = true
	r.env.Logf("node %d: fatal: %v", r.self, err)
	if r.env.Fatal != nil {
		r.env.Fatal(err)
	}
}

func (r *Reactor) tick() {
	if r.stopped {
		return
	}
	r.ticks++
	r.stats.noteTick(r.env.Clock.Monotonic(), r.cfg.TickInterval*time.Duration(r.cfg.ElectionTicks)/2)
	r.host.Tick()
	r.work.markAll() // a tick may give any group work
	r.onTick()
	r.queueProcess()
	r.env.Sched.After(r.cfg.TickInterval, r.tick)
}

// HandlePeer handles one frame from another broker.
func (r *Reactor) HandlePeer(from netx.NodeID, frame []byte) {
	if r.stopped || len(frame) == 0 {
		return
	}
	if from == netx.Anyone && !fromDuplicateOK(frame) {
		r.stats.BadFrames++
		return
	}
	switch frame[0] {
	case frameRaft:
		if err := r.host.Receive(uint64(from), frame[1:]); err != nil {
			r.stats.BadFrames++
			return
		}
	case frameRPC:
		r.handleRPC(uint64(from), frame[1:])
	default:
		r.stats.BadFrames++
		return
	}
	r.queueProcess()
}

// queueProcess arranges one process pass after the events already queued,
// so a burst of events shares one pass (and one round of fsyncs).
func (r *Reactor) queueProcess() {
	if r.processQueued || r.stopped {
		return
	}
	r.processQueued = true
	if r.processFn == nil {
		r.processFn = r.process // one method value, not one per call
	}
	r.env.Sched.After(0, r.processFn)
}

// groupIDs returns every local group, sorted (the controller first). The
// list is built once per change of the groups, not on every call: process
// calls it on every pass, and with thousands of partitions sorting them
// each time cost more than the pass's real work (issue 21). Callers must
// not modify it.
func (r *Reactor) groupIDs() []uint64 {
	if r.groupList != nil {
		return r.groupList
	}
	ids := make([]uint64, 0, len(r.parts)+1)
	if r.ctl != nil {
		ids = append(ids, controller.ControllerGroup)
	}
	for g := range r.parts { //floe:unordered sorted below
		ids = append(ids, g)
	}
	slices.Sort(ids)
	r.groupList = ids
	return ids
}

// groupsChanged drops groupIDs' cached list after r.parts or r.ctl
// changed.
func (r *Reactor) groupsChanged() { r.groupList = nil }

// groupAdded updates groupIDs' cached list after group g was added to
// r.parts. Rebuilding and sorting it for each replica a restart opens was
// quadratic in the partitions (issue 21: a fifth of the CPU of a restart
// with 10,000). A group above every other, the usual case (groups are
// numbered in creation order, and opened in that order), is appended:
// that leaves the elements an older list shares untouched. Any other is
// inserted into a copy.
func (r *Reactor) groupAdded(g uint64) {
	ids := r.groupList
	if ids == nil {
		return
	}
	i, found := slices.BinarySearch(ids, g)
	switch {
	case found:
	case i == len(ids):
		r.groupList = append(ids, g)
	default:
		r.groupList = slices.Insert(slices.Clone(ids), i, g)
	}
}

func (r *Reactor) replicaOf(g uint64) *replica.Replica {
	if g == controller.ControllerGroup {
		if r.ctl == nil {
			return nil
		}
		return r.ctl.rep
	}
	if p, ok := r.parts[g]; ok {
		return p.Replica()
	}
	return nil
}
