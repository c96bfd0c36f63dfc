package node

import (
	"sort"
	"time"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/node/partition"
)

// Stats are a broker's counters, read on the reactor (the admin endpoint
// asks the reactor for a copy).
type Stats struct {
	Requests     map[int16]uint64 // by API key
	BytesIn      int64
	RecordsIn    int64
	BytesOut     int64
	BadFrames    uint64 // peer frames that did not decode
	BadBatches   uint64 // produced batches that failed validation
	CorruptReads uint64 // reads that met a checksum failure
	SyncRounds   uint64 // rounds of group-commit fsyncs
	// SyncRoundsPipelined counts the rounds started while an earlier one
	// was still in flight (Config.SyncPipeline).
	SyncRoundsPipelined uint64
	Repairs             uint64 // damaged replicas cut back to be refetched from peers
	// LeaseRefusals counts reads a leader refused because its read lease
	// had expired (lease.go).
	LeaseRefusals uint64
	// ShareRemoteReads counts the answers a share coordinator got to its
	// reads of partitions it holds no replica of (share_read.go).
	ShareRemoteReads uint64
	// RequestsExpired counts requests answered by their deadline because
	// the handler had not answered in time (deadline.go); LateAnswers the
	// handler answers that came after and were dropped.
	RequestsExpired uint64
	LateAnswers     uint64
	// AuditRecords counts audit records queued for __audit_log,
	// AuditDropped those dropped (a full queue, a record too large).
	AuditRecords uint64
	AuditDropped uint64
	// TickStalls counts ticks that came more than half an election
	// timeout after the one before: the reactor did not run for that long
	// (a paused or CPU-starved process, a long GC or fsync on the loop).
	// Raft reads such a gap as silence, so elections that follow a stall
	// have a cause outside the protocol. TickGapMax is the longest gap
	// between ticks seen.
	TickStalls uint64
	TickGapMax time.Duration
	// Buggify counts the firings of each BUGGIFY site, in BuggifySites
	// order (simulation only; buggify.go).
	Buggify [bugSites]uint64
	// Telemetry is what clients pushed (KIP-714): the latest value per
	// metric name summed across clients, sorted; TelemetryPushes counts
	// the pushes taken.
	Telemetry       []TelemetryMetric
	TelemetryPushes uint64
	// Raft, over every group with a replica here (the controller's
	// too): RaftElections counts the elections this broker's replicas
	// started (each a new term as candidate), RaftLeaderChanges the
	// times a replica here learnt of a new leader, RaftLeadershipsWon
	// the times one became leader. ControllerTerm is the controller
	// group's term as this broker knows it.
	RaftElections      uint64
	RaftLeaderChanges  uint64
	RaftLeadershipsWon uint64
	ControllerTerm     uint64
	// RaftRoles counts, over the same groups, why replicas here started
	// elections and why leaders here stepped down (issue 21: which of
	// these a leader change under load comes from); RaftPreferredTransfers
	// counts the transfers to a partition's preferred replica this
	// broker's leaders started (balanceLeaders).
	RaftRoles              consensus.RoleCounters
	RaftPreferredTransfers uint64
	// RaftSnapshotsSent counts the Raft snapshots (MsgSnap) this broker's
	// leaders sent to members too far behind their log's start.
	RaftSnapshotsSent uint64
	// MetadataChanges counts the applied controller commands and
	// snapshots that may move replicas, configs or brokers (all but
	// leader and size reports); ReconcileWalks counts reconcile's walks of
	// the whole metadata (at most one per change, controller.go
	// walkMetadata), ReconcileVisits the partitions those walks visited. OpenRetries
	// counts replica opens put off because the process was out of file
	// descriptors (logstore.ErrFileLimit).
	MetadataChanges uint64
	ReconcileWalks  uint64
	ReconcileVisits uint64
	OpenRetries     uint64
	// ProcessVisits counts the groups the reactor's process passes
	// visited (workset.go: those that may have work, not every group).
	ProcessVisits uint64
	lastTickAt    time.Duration // monotonic time of the last tick
}

// noteTick records a tick at monotonic time now, counting a stall when it
// comes more than stall after the tick before.
func (s *Stats) noteTick(now, stall time.Duration) {
	if s.lastTickAt != 0 {
		gap := now - s.lastTickAt
		s.TickGapMax = max(s.TickGapMax, gap)
		if gap > stall {
			s.TickStalls++
		}
	}
	s.lastTickAt = now
}

// PartitionStats describes one local partition replica.
type PartitionStats struct {
	Topic         string
	Partition     int32
	Leader        bool
	LeaderEpoch   int32 // the replica's Raft term: a leader's epoch, or the latest it knows
	LogEndOffset  int64
	HighWatermark int64
	StartOffset   int64
	LogBytes      int64
	Segments      int
	// LastStableOffset and OpenTxns: the transactions open on the
	// partition (committed entries) and the offset they hold readers at.
	LastStableOffset int64
	OpenTxns         int
	// Replicas is the partition's replica count in the metadata; InSync,
	// on the leader, the voters Raft heard from within an election
	// timeout (the ISR Metadata reports), -1 elsewhere.
	Replicas int
	InSync   int
	Traffic  partition.Traffic
}

// ClusterStats is the cluster as this broker's copy of the metadata
// describes it (the same on every caught-up broker).
type ClusterStats struct {
	Brokers int // registered brokers
	// Topics lists each topic's partition count, by name.
	Topics []TopicPartitions
	// Leaderless counts partitions with no leader known: no replica has
	// reported one, or (for replicas here) Raft knows none past the grace
	// after opening (what Metadata answers LEADER_NOT_AVAILABLE for).
	Leaderless int
}

// TopicPartitions is one topic's partition count.
type TopicPartitions struct {
	Topic      string
	Partitions int
}

// ClusterStats describes the cluster from the metadata.
func (r *Reactor) ClusterStats() ClusterStats {
	st := r.ctl.state
	cs := ClusterStats{Brokers: len(st.Brokers)}
	for _, name := range sortedKeys(st.Topics) {
		t := st.Topics[name]
		cs.Topics = append(cs.Topics, TopicPartitions{Topic: name, Partitions: len(t.Partitions)})
		for i := range t.Partitions {
			if id, _ := r.partitionLeader(&t.Partitions[i]); id <= 0 {
				cs.Leaderless++
			}
		}
	}
	return cs
}

// Stats returns a copy of the counters and per-partition figures.
func (r *Reactor) Stats() (Stats, []PartitionStats) {
	s := r.stats
	s.ControllerTerm = r.ctl.term
	s.Telemetry, s.TelemetryPushes = r.telemetry.metrics(), r.telemetry.pushes
	s.Requests = map[int16]uint64{}
	for _, k := range sortedKeys(r.stats.Requests) {
		s.Requests[k] = r.stats.Requests[k]
	}
	var ps []PartitionStats
	for _, g := range sortedKeys(r.parts) {
		p := r.parts[g]
		ls := p.Replica().Stats()
		replicas, inSync := r.replicaCounts(g, p)
		ps = append(ps, PartitionStats{
			Replicas: replicas, InSync: inSync, Traffic: p.Traffic,
			Topic: p.Topic, Partition: p.Index, Leader: p.IsLeader(), LeaderEpoch: int32(p.Term()),
			LogEndOffset: p.Replica().NextOffset(), HighWatermark: p.HighWatermark(),
			StartOffset: p.StartOffset(), LogBytes: ls.SizeBytes, Segments: ls.Segments,
			LastStableOffset: p.LastStableOffset(), OpenTxns: p.OpenTxns(),
		})
	}
	return s, ps
}

// LeaderEpochOf returns the leader epoch of topic/partition here if this
// node believes it leads it: exactly what Stats reports for the first
// partition, by group id, with that topic and index and Leader set, without
// building Stats (the simulator asks at every answer).
func (r *Reactor) LeaderEpochOf(topic string, partition int32) (int32, bool) {
	var best uint64
	found := false
	for g, p := range r.parts { //floe:unordered the smallest group wins
		if p.Topic == topic && p.Index == partition && p.IsLeader() && (!found || g < best) {
			best, found = g, true
		}
	}
	if !found {
		return 0, false
	}
	return int32(r.parts[best].Term()), true
}

// replicaCounts returns p's replica count in the metadata and, on its
// leader, how many voters are in sync (-1 elsewhere).
func (r *Reactor) replicaCounts(g uint64, p *partition.Partition) (int, int) {
	replicas := 0
	if t := r.ctl.state.Topics[p.Topic]; t != nil && int(p.Index) < len(t.Partitions) {
		replicas = len(t.Partitions[p.Index].Replicas)
	}
	if !p.IsLeader() {
		return replicas, -1
	}
	return replicas, len(r.inSyncVoters(g))
}

// GroupMembers is one group's member count, on its coordinator.
type GroupMembers struct {
	Group   string
	Members int
}

// GroupMembers lists the groups this broker coordinates with their
// member counts, sorted by group.
func (r *Reactor) GroupMembers() []GroupMembers {
	var out []GroupMembers
	for _, c := range r.localCoordinators() {
		for _, g := range c.ListGroups(nil) {
			_, n := c.GroupState(g.Group)
			out = append(out, GroupMembers{Group: g.Group, Members: n})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}

// TelemetryStats returns what clients pushed (KIP-714): the latest value
// per metric name summed across clients, sorted by name, and the pushes
// taken.
func (r *Reactor) TelemetryStats() ([]TelemetryMetric, uint64) {
	return r.telemetry.metrics(), r.telemetry.pushes
}
