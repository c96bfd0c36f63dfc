package node

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/node/partition"
	"github.com/floe-broker/floe/node/replica"
)

// ReplicaView is a read-only look at one Raft group on this node, for
// white-box checkers (the simulator's invariants). Reading it changes
// nothing: it touches no file and no Raft state.
type ReplicaView struct {
	Group uint64
	Name  string // "controller" or "topic-partition"
	// Term, Vote and Commit are Raft's hard state in memory; Durable* the
	// newest hard state a sync made durable (logstore.Log.DurableHardState).
	Term, Vote, Commit                      uint64
	DurableTerm, DurableVote, DurableCommit uint64
	Leader                                  bool   // this member is the group's Raft leader
	Lead                                    uint64 // the leader it knows, 0 for none
	Applied                                 uint64 // the replica's applied index
	FirstIndex, LastIndex                   uint64
	// HighWatermark is a partition's high watermark, -1 for the
	// controller; StateHash a hash of the partition's applied state
	// (checkpoint and high watermark), 0 for the controller. Replicas at
	// the same Applied index must have the same StateHash.
	HighWatermark int64
	StateHash     uint64
	Damaged       bool // the replica is being repaired from peers
	// CommitIndex is Commit and CommitTerm the term of the entry there in
	// Raft's log, written or not (0 if the log cannot say): a committed entry, which no
	// replica may ever hold with another term.
	CommitIndex, CommitTerm uint64
	// Settled: no Ready is in flight or pending, so Raft's hard state has
	// been handed to the log and synced (its term and vote must be durable).
	Settled bool
	// Fenced: a vote fence is in force (repair.go); Fence is its durable
	// record (zero if none). DurableIndex is the log's last durable index
	// (logstore.Log.DurableIndex): entries up to it survive a crash and may
	// have been acknowledged.
	Fenced bool
	Fence  consensus.VoteFence
	// OpenFence is the vote fence the replica was last opened with (zero
	// if none), lifted since or not.
	OpenFence    consensus.VoteFence
	DurableIndex uint64
	// DurableAgreed is DurableIndex cut back below any durable entry Raft
	// has already replaced in memory (replica.DurableAgreedIndex): what
	// the member holds durably of the log Raft's commit speaks of.
	DurableAgreed uint64
	// Opening tells replicas of one group on one broker apart: it changes
	// when the replica is closed and opened again (deleted and re-created
	// by a membership change, or reopened after a repair), within one run
	// of the broker. 0 for the controller.
	Opening uint64

	// Retention and compaction (partitions only). LogBytes is the size of
	// the replica's segments, SegmentsRemoved and CleanerPasses the log's
	// counters (logstore.Stats). RetentionBytes and RetentionMs are the
	// partition's limits when its cleanup policy deletes (-1 each
	// otherwise), and RetentionBound the last index retention would drop
	// now (logstore.Log.RetentionBound with the limit maintain uses,
	// Applied+1): retention must never choose an entry not yet applied.
	LogBytes                       int64
	SegmentsRemoved, CleanerPasses int64
	RetentionBytes, RetentionMs    int64
	RetentionBound                 uint64

	// LeaseHeld: this member leads a partition and may serve reads under
	// its read lease now (lease.go); LeaseTerm is the term the lease was
	// last confirmed in (0 for none), Epoch the partition's own idea of
	// its term (its leader epoch). A lease is honoured only in the term a
	// quorum confirmed it in.
	LeaseHeld        bool
	LeaseTerm, Epoch uint64

	// Compacts: the partition's cleanup policy compacts; SegmentsCleaned
	// counts the segments the cleaner rewrote.
	Compacts        bool
	SegmentsCleaned int64

	// ProducerExpiryMs is the producer.id.expiration.ms the partition's
	// applied producer table uses (0 for the controller).
	ProducerExpiryMs int64
}

// Inspect returns a view of every Raft group on this node: the controller
// first, then partitions by group id. Name and StateHash are filled only
// when full (they cost an allocation and a checkpoint encoding each).
func (r *Reactor) Inspect(full bool) []ReplicaView {
	var in Inspector
	return in.Inspect(r, nil, full)
}

// Inspector is Inspect for a caller that looks often (the simulator's
// invariants look at every node at every simulated instant): it reuses
// its scratch space and appends to the caller's slice, so a look
// allocates nothing once the buffers have grown, and it can bring its
// last look up to date when the Reactor ran nothing since (Refresh). The
// zero value is ready.
type Inspector struct {
	groups []uint64 // scratch: the partitions' group ids, sorted
	// parts: the partition of each view of the last look (nil for the
	// controller), for Refresh.
	parts []*partition.Partition
}

// Inspect returns dst[:0] with Reactor.Inspect(full)'s views appended, in
// the same order.
func (in *Inspector) Inspect(r *Reactor, dst []ReplicaView, full bool) []ReplicaView {
	out := dst[:0]
	if n := len(r.parts) + 1; cap(out) < n {
		out = make([]ReplicaView, 0, n)
	}
	in.parts = in.parts[:0]
	if r.ctl != nil && r.ctl.rep != nil {
		in.parts = append(in.parts, nil)
		out = append(out, viewOf(r.ctl.rep))
		v := &out[len(out)-1]
		v.Fenced, v.Fence = r.fenced(v.Group), r.fenceOfGroup(v.Group)
		v.OpenFence = r.openFenceOf(v.Group)
		v.Name, v.HighWatermark = "controller", -1
	}
	for _, g := range in.sortedParts(r) {
		p := r.parts[g]
		if p == nil {
			continue // the controller, in groupIDs' list
		}
		rep := p.Replica()
		if rep == nil {
			continue
		}
		in.parts = append(in.parts, p)
		out = append(out, viewOf(rep))
		r.partitionView(p, &out[len(out)-1], full)
	}
	return out
}

// sortedParts returns r's partition groups in order: the Reactor's cached
// list (which also holds the controller group) when it has one, else its
// own, without filling the Reactor's cache (a look changes nothing).
func (in *Inspector) sortedParts(r *Reactor) []uint64 {
	if r.groupList != nil {
		return r.groupList
	}
	in.groups = in.groups[:0]
	for g := range r.parts { //floe:unordered sorted below
		in.groups = append(in.groups, g)
	}
	slices.Sort(in.groups)
	return in.groups
}

// RefreshView brings v, a copy of view i of what this Inspector's last
// Inspect(r, _, false) returned, up to r's clock, for a Reactor none of
// whose code ran since that look (no request, message, timer or disk
// completion): its memory is as it was then, so only the fields Inspect
// computes from the clock can differ, LeaseHeld (the lease's deadline)
// and RetentionBound (retention.ms against the wall clock), and
// RefreshView recomputes exactly those, as Inspect would.
func (in *Inspector) RefreshView(r *Reactor, i int, v *ReplicaView) {
	p := in.parts[i]
	if p == nil {
		return // the controller: no lease, no retention
	}
	v.LeaseHeld, _ = r.leaseState(p)
	v.RetentionBound = r.retentionBound(p)
}

// partitionView fills the partition's part of v, which viewOf began.
func (r *Reactor) partitionView(p *partition.Partition, v *ReplicaView, full bool) {
	// One look-up of the group's local state for what fenced,
	// fenceOfGroup and openFenceOf would each find.
	if s, ok := r.local[v.Group]; ok && s != nil {
		v.Fenced, v.Fence, v.OpenFence = !s.fence.IsZero(), s.fence, s.openFence
		v.Opening, v.LeaseTerm = s.opening, s.lease.term
	}
	v.HighWatermark = p.HighWatermark()
	v.LeaseHeld, _ = r.leaseState(p)
	v.Epoch, v.Compacts = p.Term(), p.Cfg.Compact
	v.ProducerExpiryMs = p.ProducerExpiration()
	r.retentionView(p, v)
	if !full {
		return
	}
	v.Name = fmt.Sprintf("%s-%d", p.Topic, p.Index)
	h := fnv.New64a()
	h.Write(p.ReplicatedState())
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(v.HighWatermark)))
	v.StateHash = h.Sum64()
}

func viewOf(rep *replica.Replica) ReplicaView {
	hs, ss := rep.RaftHardSoft()
	dhs := rep.DurableHardState()
	v := ReplicaView{
		Group: uint64(rep.Group), Term: hs.Term, Vote: hs.Vote, Commit: hs.Commit,
		DurableTerm: dhs.Term, DurableVote: dhs.Vote, DurableCommit: dhs.Commit,
		Leader: ss.RaftState == consensus.StateLeader, Lead: ss.Lead, Applied: rep.Applied(),
		FirstIndex: rep.FirstIndex(), LastIndex: rep.LastIndex(), DurableIndex: rep.DurableIndex(), DurableAgreed: rep.DurableAgreedIndex(), Damaged: rep.Damaged(),
		CommitIndex: hs.Commit, Settled: rep.Settled(),
	}
	if t, err := rep.RaftTermAt(v.CommitIndex); err == nil {
		v.CommitTerm = t
	}
	return v
}

// TermAt is the term of entry index of group's log on this node, if the
// log holds it.
func (r *Reactor) TermAt(group, index uint64) (uint64, bool) {
	rep := r.replicaOf(group)
	if rep == nil {
		return 0, false
	}
	t, err := rep.RaftTermAt(index)
	return t, err == nil
}

// CommittedHash hashes the entries lo..hi (inclusive) of group's log on
// this node: index, term and data of each. Replicas whose commit index is
// at least hi must agree on it (Raft's log matching). It reads the log, so
// call it when the run is over, not while it goes.
func (r *Reactor) CommittedHash(group, lo, hi uint64) (uint64, error) {
	return r.committedHash(group, lo, hi, true)
}

// CommittedTermsHash is CommittedHash of index and term only: replicas of
// a compacted partition rewrite their entries' data each on its own
// (logstore/compact.go), so only the entries' identity must agree.
func (r *Reactor) CommittedTermsHash(group, lo, hi uint64) (uint64, error) {
	return r.committedHash(group, lo, hi, false)
}

func (r *Reactor) committedHash(group, lo, hi uint64, data bool) (uint64, error) {
	rep := r.replicaOf(group)
	if rep == nil {
		return 0, fmt.Errorf("node %d: no replica of group %d", r.self, group)
	}
	h := fnv.New64a()
	var buf []byte
	for next := lo; next <= hi; {
		es, err := rep.Entries(next, hi+1, 1<<20)
		if err != nil {
			return 0, err
		}
		if len(es) == 0 {
			return 0, fmt.Errorf("node %d group %d: no entries at %d", r.self, group, next)
		}
		for _, e := range es {
			buf = binary.BigEndian.AppendUint64(buf[:0], e.Index)
			buf = binary.BigEndian.AppendUint64(buf, e.Term)
			h.Write(buf)
			if data {
				h.Write(e.Data)
			}
			next = e.Index + 1
		}
	}
	return h.Sum64(), nil
}

func (r *Reactor) fenced(g uint64) bool {
	s, ok := r.local[g]
	return ok && s != nil && !s.fence.IsZero()
}

// openFenceOf is the vote fence group g's replica was last opened with.
func (r *Reactor) openFenceOf(g uint64) consensus.VoteFence {
	if s, ok := r.local[g]; ok && s != nil {
		return s.openFence
	}
	return consensus.VoteFence{}
}

// fenceOfGroup is group g's durable vote fence record, zero if none.
func (r *Reactor) fenceOfGroup(g uint64) consensus.VoteFence {
	if s, ok := r.local[g]; ok && s != nil {
		return s.fence
	}
	return consensus.VoteFence{}
}

// retentionView fills v's retention and compaction figures.
func (r *Reactor) retentionView(p *partition.Partition, v *ReplicaView) {
	ls := p.Replica().Stats()
	v.LogBytes, v.SegmentsRemoved, v.CleanerPasses = ls.SizeBytes, ls.SegmentsRemoved, ls.Cleaner.Passes
	v.SegmentsCleaned = ls.Cleaner.SegmentsCleaned
	v.RetentionBytes, v.RetentionMs = -1, -1
	if retains(p) {
		v.RetentionBytes, v.RetentionMs = p.Cfg.RetentionBytes, p.Cfg.RetentionMs
	}
	v.RetentionBound = r.retentionBound(p)
}

// retains: the partition's cleanup policy deletes, with a limit.
func retains(p *partition.Partition) bool {
	return p.Cfg.Delete && (p.Cfg.RetentionMs >= 0 || p.Cfg.RetentionBytes >= 0)
}

// retentionBound is the last index retention would drop now (0 if none
// or the partition does not retain), with the limit maintain uses.
func (r *Reactor) retentionBound(p *partition.Partition) uint64 {
	if !retains(p) {
		return 0
	}
	rep := p.Replica()
	return rep.RetentionBound(r.env.Clock.Now().UnixMilli(), p.Cfg.RetentionMs, p.Cfg.RetentionBytes, rep.Applied()+1)
}
