package node

import (
	"slices"

	"bytes"
	"fmt"
	"math"
	"path"
	"time"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/partition"
	"github.com/floe-broker/floe/node/replica"
)

// raftConfig configures the Raft member of a group whose log is log.
func (r *Reactor) raftConfig(log *logstore.Log) consensus.Config {
	cfg := r.raftConfigOf(log)
	if !r.buggifyHealed() && r.buggify(bugRaftSmallMessages) {
		// BUGGIFY: one entry per append message, four in flight: a
		// follower catches up in many small steps (buggify.go).
		cfg.MaxSizePerMsg, cfg.MaxInflightMsgs = 1, 4
	}
	return cfg
}

// The Raft members' append limits (consensus.Config): a MiB of entries
// per append message, 256 appends in flight per member.
const (
	raftMsgBytesMax    = 1 << 20
	raftInflightMsgMax = 256
)

func (r *Reactor) raftConfigOf(log *logstore.Log) consensus.Config {
	return consensus.Config{
		ID:                         r.self,
		ElectionTicks:              r.cfg.ElectionTicks,
		HeartbeatTicks:             r.cfg.HeartbeatTicks,
		MaxSizePerMsg:              raftMsgBytesMax,
		MaxInflightMsgs:            raftInflightMsgMax,
		MaxInflightBytes:           32 << 20,
		MaxUncommittedEntriesBytes: 256 << 20,
		CheckQuorum:                true,
		PreVote:                    true,
		Rand:                       r.env.Rand,
		Counters:                   &r.stats.RaftRoles,
		// Every group starts at term 1 (bootstrap) and elects its first
		// leader in term 2; a replica added later starts at term 0. So a
		// member still at term 1 or below has never heard from a leader,
		// and has no lease promise to keep after a restart.
		Fresh: log.HardState().Term <= bootstrapTerm,
	}
}

// bootstrapTerm is the term of a new group's first entries; no leader is
// ever elected in it.
const bootstrapTerm = 1

// bootstrap writes a new group's first entries when this node is one of its
// initial voters: one configuration change per voter at term 1, committed.
// Every initial voter writes the same entries, so their logs agree from the
// start, and a replica added later learns the full membership by replaying
// them like any other entry.
//
// Only a new log is bootstrapped: one that has held a hard state before lost
// its entries (damage, repaired from peers behind a vote fence), and writing
// the first entries again would also reset its term and vote. A new log is
// also one a crash left with no hard state and a prefix of these very
// entries: a bootstrap torn between its entries and its meta record (sync
// failed, or the power cut before the meta record, written last, was
// durable). Such a log is finished, not left as it is: with no hard state
// its entries are not committed, so it never applies the membership, and
// the group may have no other replica that holds it (sim seed 1534293
// --all-faults: __consumer_offsets-0's preferred replica's bootstrap failed
// at its meta sync, the other two lost their disks, and the partition's
// reassignment waited for a leader for good).
func bootstrap(log *logstore.Log, voters []uint64) error {
	if log.Snapshot().Index != 0 || log.HardState() != (logstore.HardState{}) || len(voters) == 0 {
		return nil
	}
	// Every replica writes these entries on its own and counts them
	// committed, so they must be the same on every replica whatever order
	// its metadata listed the replicas in: a preferred-leader change
	// (controller.Prefer) reorders them, and a replica opened after one
	// wrote its first two entries swapped (sim seed 37 with the balancer:
	// committed-prefix-differs at entries 1 and 2).
	voters = slices.Sorted(slices.Values(voters))
	es := make([]logstore.Entry, len(voters))
	for i, v := range voters {
		cc := consensus.ConfChange{Type: consensus.ConfAddVoter, NodeID: v}
		es[i] = replica.ToLog(consensus.Entry{Term: bootstrapTerm, Index: uint64(i + 1), Type: consensus.EntryConfChange, Data: cc.Marshal()})
	}
	if n := log.LastIndex(); n != 0 {
		torn, err := tornBootstrap(log, es)
		if err != nil || !torn {
			return err
		}
		es = es[n:]
	}
	if err := log.Append(es...); err != nil {
		return err
	}
	log.SetHardState(logstore.HardState{Term: bootstrapTerm, Commit: uint64(len(voters))})
	return log.Sync()
}

// tornBootstrap reports whether log's entries (it has some, and no hard
// state) are a prefix of the bootstrap entries es.
func tornBootstrap(log *logstore.Log, es []logstore.Entry) (bool, error) {
	n := log.LastIndex()
	if n > uint64(len(es)) {
		return false, nil
	}
	have, err := log.Entries(1, n+1, math.MaxInt)
	if err != nil {
		return false, err
	}
	if uint64(len(have)) != n {
		return false, nil
	}
	for i, e := range have {
		w := es[i]
		if e.Index != w.Index || e.Term != w.Term || e.Kind != w.Kind || !bytes.Equal(e.Data, w.Data) {
			return false, nil
		}
	}
	return true, nil
}

func (r *Reactor) logOptions(segmentBytes int64, segmentAge time.Duration) logstore.Options {
	return logstore.Options{SegmentBytes: segmentBytes, SegmentAge: segmentAge, Clock: r.env.Clock,
		RollEarly: r.buggifyHook(bugSegmentRollEarly), ReadBuffers: r.readBufs}
}

// openController opens (or, on first boot, creates) the controller group.
func (r *Reactor) openController() error {
	dir := r.controllerDir()
	log, rec, err := logstore.Open(r.env.FS, dir, r.logOptions(64<<20, 0))
	if err != nil {
		return fmt.Errorf("node: controller log: %w", err)
	}
	if rec.EntriesCut > 0 {
		r.env.Logf("node %d: controller log recovery cut %d entries: %s", r.self, rec.EntriesCut, rec.Reason)
	}
	peers := r.controllerPeers()
	if r.isInitialVoter() {
		if err := bootstrap(log, r.initialVoters()); err != nil {
			_ = log.Close()
			return fmt.Errorf("node: controller bootstrap: %w", err)
		}
	}
	rc := r.raftConfig(log)
	if r.isInitialVoter() {
		// Only a replica that holds the bootstrap entries takes part in
		// a new group's first election; one started with --join never
		// does, so it has no exception to the lost-log fence
		// (consensus/fence.go: its term probe tells it a new group).
		rc.LostLogBootstrapTerm = bootstrapTerm
	}
	if err := r.fenceOnOpen(controller.ControllerGroup, "the controller", dir, log, rec, peers, &rc); err != nil {
		_ = log.Close()
		return err
	}
	c := &ctlGroup{r: r, state: controller.NewState(r.cfg.ClusterID)}
	rep, err := replica.New(replica.Config{Group: consensus.GroupID(controller.ControllerGroup), Raft: rc,
		FS: r.env.FS, Dir: dir, Pipeline: r.syncPipeline()}, log, c)
	if err != nil {
		_ = log.Close()
		return err
	}
	c.rep = rep
	r.ctl = c
	r.metaChanges++
	r.groupsChanged()
	rep.Register(r.host)
	return nil
}

func (r *Reactor) initialVoters() []uint64 {
	if len(r.cfg.Peers) == 0 {
		if r.cfg.Join != "" {
			return nil // joining a running cluster: its voters will tell us
		}
		return []uint64{r.self}
	}
	ids := make([]uint64, 0, len(r.cfg.Peers))
	for _, p := range r.cfg.Peers {
		ids = append(ids, uint64(p.ID))
	}
	return ids
}

func (r *Reactor) isInitialVoter() bool {
	for _, id := range r.initialVoters() {
		if id == r.self {
			return true
		}
	}
	return false
}

func partitionDir(dataDir, topic string, index int32, group uint64) string {
	return path.Join(dataDir, "partitions", fmt.Sprintf("%s-%d-%d", topic, index, group))
}

// ensurePartition opens the local replica of a partition, creating its log
// on first sight. A replica that is one of the partition's initial voters
// bootstraps the group; one added later starts empty and is caught up by
// the leader.
func (r *Reactor) ensurePartition(t *controller.Topic, p *controller.Partition) error {
	if _, ok := r.parts[p.Group]; ok {
		return nil
	}
	cfg := r.topicConfig(t)
	opts := r.logOptions(cfg.SegmentBytes, segmentAge(cfg))
	if cfg.Compact {
		// Early rolls would hand compaction closed segments it cleans
		// on each replica at its own time, which is legal but makes
		// replicas' bytes differ, and the simulator's committed-prefix
		// invariant compares bytes (docs/testing.md).
		opts.RollEarly = nil
	}
	log, rec, err := logstore.Open(r.env.FS, partitionDir(r.cfg.DataDir, t.Name, p.Index, p.Group), opts)
	if err != nil {
		return fmt.Errorf("node: open %s-%d: %w", t.Name, p.Index, err)
	}
	if rec.EntriesCut > 0 {
		r.env.Logf("node %d: %s-%d recovery cut %d entries: %s", r.self, t.Name, p.Index, rec.EntriesCut, rec.Reason)
	}
	// A replica placed here again after its removal starts where the
	// removed one stopped (tombstone.go).
	if restored, err := restoreTombstone(r.env.FS, partitionDir(r.cfg.DataDir, t.Name, p.Index, p.Group), log); err != nil {
		_ = log.Close()
		return fmt.Errorf("node: restore %s-%d: %w", t.Name, p.Index, err)
	} else if restored != (tombstone{}) {
		r.env.Logf("node %d: %s-%d placed here again: starts from its tombstone %+v", r.self, t.Name, p.Index, restored)
	}
	// (A single replica has nobody to get lost entries back from, and a
	// fence would only keep it from ever leading again.)
	name := fmt.Sprintf("%s-%d", t.Name, p.Index)
	dir := partitionDir(r.cfg.DataDir, t.Name, p.Index, p.Group)
	if err := r.fenceLostDisk(p.Group, name, dir, log, len(p.Replicas) > 1); err != nil {
		_ = log.Close()
		return err
	}
	if p.Target == nil && slices.Contains(p.Replicas, int32(r.self)) && !r.everHadConf(p) {
		voters := make([]uint64, len(p.Replicas))
		for i, id := range p.Replicas {
			voters[i] = uint64(id)
		}
		if err := bootstrap(log, voters); err != nil {
			_ = log.Close()
			return fmt.Errorf("node: bootstrap %s-%d: %w", t.Name, p.Index, err)
		}
	}
	part := partition.New(t.Name, p.Index, cfg)
	part.RebuildReadFault = r.buggifyHook(bugPendingRebuildReadFails)
	rc := r.raftConfig(log)
	firstElection := p.Target == nil && !p.Moved && log.HardState().Term <= bootstrapTerm
	rank := slices.Index(p.Replicas, int32(r.self))
	if firstElection && rank > 0 {
		rc.ElectionDelayTicks = rank * r.cfg.ElectionTicks
	}
	if err := r.fenceOnOpen(p.Group, name, dir, log, rec, len(p.Replicas) > 1, &rc); err != nil {
		_ = log.Close()
		return err
	}
	if rc.VoteFence.IsLostLog() {
		rc.ProbeVoters = probeVotersOf(p)
	}
	rep, err := replica.New(replica.Config{Group: consensus.GroupID(p.Group), Raft: rc, FS: r.env.FS, Dir: dir,
		Pipeline: r.syncPipeline()}, log, part)
	if err != nil {
		_ = log.Close()
		return err
	}
	part.Attach(rep)
	r.parts[p.Group] = part
	r.groupAdded(p.Group)
	r.byName[topicPartition{t.Name, p.Index}] = part
	s := r.group(p.Group)
	r.openings++
	s.openedTick, s.opening = r.ticks, r.openings
	rep.Register(r.host)
	if firstElection && rank == 0 {
		s.campaign = firstCampaign{due: true}
	}
	return nil
}

// The first election of a new partition. Its leader should be its
// preferred replica (the first of its replicas in the placement), at once
// and for good, as Kafka's controller makes it at creation: a hand-off
// later is a leader change clients see. So the placement's replica order
// is also the order in which the replicas may campaign:
//
//   - the preferred replica campaigns as soon as it has applied its
//     bootstrap membership, and again on every tick while the group has
//     no leader (campaignIfDue): its first requests may reach peers that
//     have not opened the partition yet, which drop them. Brokers open the
//     replicas they are preferred for first (openSome), so the preferred
//     replica is normally open, and asking, before the others open;
//   - the replica at rank k of the placement holds its first election
//     timeout back by k election timeouts (consensus ElectionDelayTicks),
//     so it campaigns only if the ones before it could not win: the
//     preferred replica's broker is down, or cut off.
//
// Only the timing of elections changes: every replica may still vote and
// be elected, so a partition whose preferred replica is down at creation
// gets another leader about one election timeout later than usual, and
// leader balancing (balanceLeaders) hands leadership back once the
// preferred replica is up again. A group counts as new while its log's
// term is the bootstrap term 1 (no election has begun in it) and its
// replica set never changed.

// firstCampaignTimeouts is how many election timeouts after it opened a
// new partition's preferred replica keeps asking for votes: as long as the
// second replica's longest first timeout (one election timeout of delay
// plus at most two), after which the normal election takes over.
const firstCampaignTimeouts = 3

// firstCampaign is a new partition's first election in progress: due
// while its preferred replica keeps asking for votes; mark is 1 + the tick
// of its last campaign, or 0 before the first.
type firstCampaign struct {
	due  bool
	mark uint64
}

// campaignIfDue makes a new partition's preferred replica campaign while
// the group has no leader, at most once a tick, for firstCampaignTimeouts
// election timeouts after it opened. A pre-vote changes no term, so asking
// again disturbs nobody; a member whose real vote is out waits for the
// answers.
func (r *Reactor) campaignIfDue(g uint64) {
	s, ok := r.local[g]
	if !ok || !s.campaign.due || s.campaign.mark == r.ticks+1 {
		return
	}
	p, ok := r.parts[g]
	if !ok {
		s.campaign = firstCampaign{}
		return
	}
	rep := p.Replica()
	st := rep.BasicStatus()
	if st.Lead != 0 || r.ticks-s.openedTick > uint64(firstCampaignTimeouts*r.cfg.ElectionTicks) {
		s.campaign = firstCampaign{}
		return
	}
	if st.RaftState == consensus.StateCandidate || !slices.Contains(rep.Conf().Voters, r.self) {
		return // votes are out, or the bootstrap membership is not applied yet
	}
	s.campaign.mark = r.ticks + 1
	rep.Campaign()
	r.queueProcess()
}

// campaignNewGroups retries the first campaigns still due (on every tick).
func (r *Reactor) campaignNewGroups() {
	for _, g := range r.groupsWhere(func(s *groupState) bool { return s.campaign.due }) {
		r.campaignIfDue(g)
	}
}

// fenceOnOpen sets the vote fence of group g's replica, whose log was just
// opened: the durable fence it already had, merged, if it has peers to get
// entries back from, with the one recovery calls for (recoveryFence), made
// durable first.
func (r *Reactor) fenceOnOpen(g uint64, name, dir string, log *logstore.Log, rec logstore.Recovery, peers bool, rc *consensus.Config) error {
	f, err := readFence(r.env.FS, dir, log.HardState().Term)
	if err != nil {
		return fmt.Errorf("node: open %s: %w", name, err)
	}
	if lost := recoveryFence(log, rec); !lost.IsZero() && peers {
		f = f.Merge(lost)
		if err := writeFence(r.env.FS, dir, f); err != nil {
			return fmt.Errorf("node: fence %s: %w", name, err)
		}
		r.env.Logf("node %d: %s lost entries it may have acknowledged (%s; log ends at %d, recorded commit %d): vote fence %v",
			r.self, name, rec.Reason, log.LastIndex(), log.HardState().Commit, f)
	}
	// Only now, the fence durable (or, without peers, nothing to fence),
	// may the log forget the loss it recorded before repairing its files
	// (logstore/loss.go): until here a failed start or a crash must find
	// it again.
	if err := log.LossFenced(); err != nil {
		return fmt.Errorf("node: fence %s: %w", name, err)
	}
	if !f.IsZero() {
		rc.VoteFence = f
		r.group(g).fence = f
	}
	r.group(g).openFence = f
	return nil
}

// recoveryFence returns the vote fence a replica needs after its log was
// opened (zero if it lost nothing it may have acknowledged). Entries cut
// because they were damaged were durable, and so were the ones after them
// (Recovery.HeldThrough bounds them). A log that ends below the commit
// index its meta record holds lost committed entries: a torn write never
// reaches below what was committed (the meta record is written only after
// the entries it covers are durable, logstore/sync.go), but a file cut back
// by the disk does, and then nothing says how far the lost tail went, so
// the fence is unbounded (repair.go, fenceOfLoss). A log cut back below
// its snapshot point is restarted right after it by logstore, which then
// reports the loss as of unknown extent (Recovery.HeldUnknown): its
// recorded commit index may be the snapshot point itself, and the entries
// it held past it are in no record (sim seed 911081).
func recoveryFence(log *logstore.Log, rec logstore.Recovery) consensus.VoteFence {
	hs := log.HardState()
	var f consensus.VoteFence
	if rec.Corrupt {
		f.Index = max(rec.HeldThrough, log.LastIndex()+uint64(rec.EntriesCut))
		if rec.HeldUnknown {
			f.Index = fenceUnbounded
		}
	}
	if hs.Commit > log.LastIndex() && hs.Commit > f.Index {
		f.Index = fenceUnbounded
	}
	if !f.IsZero() {
		f.Term = hs.Term
	}
	return f
}

// segmentAge is segment.ms as a duration.
func segmentAge(cfg partition.Config) time.Duration {
	return time.Duration(cfg.SegmentMs) * time.Millisecond
}

// everHadConf reports whether the partition's membership has changed since
// creation (then only the leader may tell a fresh replica who the voters
// are). The controller records each change with SetReplicas and the target
// of a reassignment; a partition that never moved has neither.
func (r *Reactor) everHadConf(p *controller.Partition) bool { return p.Moved }

// DescribeReplicas describes this broker's replicas of topic (of every
// topic if topic is empty), one line each, for a failing simulator run's
// trace: the Raft member's state and membership as it sees them, its vote
// fence, and the controller's record of the partition.
func (r *Reactor) DescribeReplicas(topic string) []string {
	var out []string
	for _, g := range sortedKeys(r.parts) {
		p := r.parts[g]
		if topic != "" && p.Topic != topic {
			continue
		}
		st := p.Replica().Status()
		line := fmt.Sprintf("n%d %s-%d g%d: %v term=%d vote=%d lead=%d commit=%d applied=%d last=%d conf=%v learners=%v fence=%v doomed=%v",
			r.self, p.Topic, p.Index, g, st.RaftState, st.Term, st.Vote, st.Lead, st.Commit, st.Applied, st.LastIndex,
			st.Config.Voters, st.Config.Learners, p.Replica().VoteFence(), r.doomed[g])
		if _, cp, ok := r.ctl.state.PartitionByGroup(g); ok {
			line += fmt.Sprintf(" meta: replicas=%v target=%v epoch=%d settled=%v", cp.Replicas, cp.Target, cp.ReassignEpoch, cp.Settled())
		}
		for _, pr := range st.Progress {
			line += fmt.Sprintf(" p%d:match=%d,next=%d,active=%v", pr.ID, pr.Match, pr.Next, pr.RecentActive)
		}
		out = append(out, line)
	}
	return out
}

// probeVotersOf are the voters a replica under the lost-log fence asks for
// the group's term when its log holds no membership (Config.ProbeVoters):
// a replaced disk's replica of a group that was moved onto this broker
// opens empty, without the bootstrap entries an initial voter writes, and
// asking nobody it took a stale leader's term and acknowledged its
// entries (consensus/fence.go, TestLostLogProbeWithoutVotersInLog). The
// group's replicas in the metadata applied here, with the target of a
// reassignment in progress.
func probeVotersOf(p *controller.Partition) []uint64 {
	var ids []uint64
	for _, id := range p.Replicas {
		ids = append(ids, uint64(id))
	}
	for _, id := range p.Target {
		if !slices.Contains(p.Replicas, id) {
			ids = append(ids, uint64(id))
		}
	}
	return ids
}
