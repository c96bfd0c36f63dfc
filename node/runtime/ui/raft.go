package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RaftGroup is one Raft group's replica on the broker serving the UI, as
// that replica's Raft sees it (Config.RaftLocal gives them). Indexes are
// Raft log entries, not Kafka offsets.
type RaftGroup struct {
	Controller bool // the controller group (Topic and Partition unset)
	Topic      string
	Partition  int32
	Term       uint64
	Lead       uint64 // the leader this replica knows, 0 for none
	Role       string // StateLeader, StateFollower, StateCandidate, StatePreCandidate
	Commit     uint64
	Applied    uint64
	FirstIndex uint64
	LastIndex  uint64
	Voters     []uint64
	Learners   []uint64
	Fenced     bool // a vote fence is in force (the replica lost entries it may have acknowledged)
	Damaged    bool // the replica is being repaired from its peers
	// Members is the leader's view of every member, on the leader only.
	Members []RaftMember
}

// RaftMember is a leader's record of one member's log.
type RaftMember struct {
	ID              uint64
	Match, Next     uint64
	State           string // StateProbe, StateReplicate, StateSnapshot
	Learner         bool
	RecentActive    bool
	PendingSnapshot uint64
	Inflight        int
}

// raftMemberRow is a member with its lag behind the leader's log.
type raftMemberRow struct {
	RaftMember
	Lag    uint64 // leader's last index minus Match
	Self   bool   // the leader itself
	Behind bool   // lagging and not heard from, or probing/snapshotting
	// HeardAgoMs and CaughtUpAgoMs: how long ago the leader last heard
	// from the member and last saw it hold its whole log (DescribeQuorum's
	// timestamps, on the leader's clock); -1 when unknown.
	HeardAgoMs, CaughtUpAgoMs int64
}

type raftLocal struct {
	RaftGroup
	Rows []raftMemberRow
}

type raftPartitionRow struct {
	Topic           string
	Partition       int32
	Leader          int32
	Epoch           int32 // the leader epoch Metadata reports: the Raft term at the leader
	Replicas, ISR   []int32
	Offline         []int32
	Err             string
	Problems        []string
	Local           *raftLocal // this broker's replica, if it holds one
	LeaderElsewhere bool       // the progress of the members is on another broker
	// Quorum is the members as the partition's leader reports them
	// (DescribeQuorum, asked of QuorumFrom), or QuorumErr says why not
	// (the leader unreachable, or leadership moved since Metadata).
	Quorum            []raftMemberRow
	QuorumFrom        int32
	QuorumErr         string
	QuorumUnreachable bool
}

type raftData struct {
	Node          int32 // the broker serving the UI
	Controller    int32
	Brokers       []int32
	ControllerRep *raftLocal
	// Quorum is the controller group's members as its leader reports them
	// (DescribeQuorum), when this broker does not lead it: match index,
	// lag behind the leader's and ages, without progress state.
	Quorum     []raftMemberRow
	QuorumFrom int32 // the broker that answered
	QuorumErr  string
	Partitions []raftPartitionRow
	Problems   int
	LocalErr   string
	Filter     string
}

// errNoRaftSource is the page's answer when the UI runs without the
// broker's Raft figures (a UI not mounted by a broker).
var errNoRaftSource = errors.New("this UI has no access to the broker's Raft state")

// raft is the Raft health page: every partition's leader, term (leader
// epoch), replicas, ISR and offline replicas as Metadata reports them to
// this session, joined with this broker's own Raft replicas (term, role,
// commit, progress state where it leads) and with each member's match
// index, lag and ages as the partition's leader reports them
// (DescribeQuorum, asked of every leader broker at once: raft_members.go).
// It needs DESCRIBE on the cluster, checked by the broker: the page first
// sends DescribeLogDirs, which the broker refuses without it.
func (s *Server) raft(w http.ResponseWriter, r *http.Request, sess *session) {
	d, err := s.raftData(r, sess)
	if err != nil {
		s.failErr(w, r, sess, "Raft health", err)
		return
	}
	p := s.pageFor(sess, "raft", "Raft health")
	p.Data = d
	s.render(w, http.StatusOK, "raft", p)
}

// raftJSON is the same data as JSON.
func (s *Server) raftJSON(w http.ResponseWriter, r *http.Request, sess *session) {
	d, err := s.raftData(r, sess)
	if err != nil {
		s.failErr(w, r, sess, "Raft health", err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) raftData(r *http.Request, sess *session) (*raftData, error) {
	d := &raftData{Filter: strings.TrimSpace(r.URL.Query().Get("topic"))}
	if d.Filter != "" {
		if err := checkTopicName(d.Filter); err != nil {
			return nil, err
		}
	}
	if s.cfg.RaftLocal == nil {
		return nil, errNoRaftSource
	}
	var groups []RaftGroup
	err := s.kafka(r, sess, func(ctx context.Context, cl *kgo.Client, adm *kadm.Client) error {
		m, err := adm.Metadata(ctx)
		if err != nil {
			return err
		}
		// The authorization check: DescribeLogDirs needs DESCRIBE on the
		// cluster. An empty topic list asks for no replica.
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Topics = []kmsg.DescribeLogDirsRequestTopic{}
		resp, err := req.RequestWith(ctx, cl.Broker(int(s.cfg.NodeID)))
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		d.Node = s.cfg.NodeID
		if groups, err = s.cfg.RaftLocal(ctx); err != nil {
			_, d.LocalErr = classify(err)
		}
		d.Controller = m.Controller
		for _, b := range m.Brokers {
			d.Brokers = append(d.Brokers, b.NodeID)
		}
		sort.Slice(d.Brokers, func(i, j int) bool { return d.Brokers[i] < d.Brokers[j] })
		for _, t := range m.Topics.Sorted() {
			if d.Filter != "" && t.Topic != d.Filter {
				continue
			}
			for _, p := range t.Partitions.Sorted() {
				row := raftPartitionRow{Topic: t.Topic, Partition: p.Partition, Leader: p.Leader, Epoch: p.LeaderEpoch,
					Replicas: p.Replicas, ISR: p.ISR, Offline: p.OfflineReplicas}
				if p.Err != nil {
					row.Err = p.Err.Error()
				}
				d.Partitions = append(d.Partitions, row)
			}
		}
		d.joinLocal(groups)
		ask := func(ctx context.Context, broker int32, req *kmsg.DescribeQuorumRequest) (*kmsg.DescribeQuorumResponse, error) {
			return req.RequestWith(ctx, cl.Broker(int(broker)))
		}
		d.joinQuorums(askLeaders(ctx, ask, d.leaders(), quorumBound))
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range d.Partitions {
		row := &d.Partitions[i]
		row.Problems = partitionProblems(row)
		if len(row.Problems) > 0 {
			d.Problems++
		}
	}
	return d, nil
}

// joinLocal puts this broker's own replicas beside Metadata's partitions.
func (d *raftData) joinLocal(groups []RaftGroup) {
	local := map[groupKey]*raftLocal{}
	for _, g := range groups {
		l := &raftLocal{RaftGroup: g, Rows: memberRows(g)}
		l.Members = nil // Rows has them, with their lag
		if g.Controller {
			d.ControllerRep = l
			continue
		}
		local[groupKey{g.Topic, g.Partition}] = l
	}
	for i := range d.Partitions {
		row := &d.Partitions[i]
		row.Local = local[groupKey{row.Topic, row.Partition}]
		row.LeaderElsewhere = row.Leader >= 0 && row.Leader != d.Node
	}
}

// leaders is what to ask each leader broker: the partitions Metadata says
// it leads, and the controller group of the controller's leader when this
// broker does not lead it (its members are then known only there).
func (d *raftData) leaders() map[int32][]groupKey {
	out := map[int32][]groupKey{}
	if d.Controller >= 0 && (d.ControllerRep == nil || len(d.ControllerRep.Rows) == 0) {
		out[d.Controller] = append(out[d.Controller], controllerGroup)
	}
	for _, row := range d.Partitions {
		if row.Leader >= 0 {
			out[row.Leader] = append(out[row.Leader], groupKey{row.Topic, row.Partition})
		}
	}
	return out
}

// joinQuorums puts the leaders' answers beside the partitions (and the
// controller group); where this broker leads, its own rows get the ages.
func (d *raftData) joinQuorums(answers map[groupKey]quorumAnswer) {
	if a, ok := answers[controllerGroup]; ok {
		d.Quorum, d.QuorumFrom, d.QuorumErr = a.Rows, a.From, a.Err
	}
	for i := range d.Partitions {
		row := &d.Partitions[i]
		a, ok := answers[groupKey{row.Topic, row.Partition}]
		if !ok {
			continue
		}
		row.Quorum, row.QuorumFrom, row.QuorumErr, row.QuorumUnreachable = a.Rows, a.From, a.Err, a.Unreachable
		if row.Local != nil && len(row.Local.Rows) > 0 {
			withAges(row.Local.Rows, a.Rows)
		}
	}
}

// memberRows orders a leader's members with their lag behind its log.
func memberRows(g RaftGroup) []raftMemberRow {
	var rows []raftMemberRow
	for _, m := range g.Members {
		row := raftMemberRow{RaftMember: m, Self: m.ID == g.Lead, HeardAgoMs: -1, CaughtUpAgoMs: -1}
		if g.LastIndex > m.Match {
			row.Lag = g.LastIndex - m.Match
		}
		row.Behind = !row.Self && (m.State != "StateReplicate" || (row.Lag > 0 && !m.RecentActive))
		rows = append(rows, row)
	}
	return rows
}

// partitionProblems says what is wrong with a partition, from Metadata and
// (where this broker holds a replica) its Raft state.
func partitionProblems(row *raftPartitionRow) []string {
	var out []string
	if row.Err != "" {
		out = append(out, row.Err)
	}
	if row.Leader < 0 {
		out = append(out, "no leader")
	}
	if len(row.Offline) > 0 {
		out = append(out, "offline replicas: "+ids(row.Offline))
	}
	if n := len(row.Replicas) - len(row.ISR); n > 0 && row.Leader >= 0 {
		out = append(out, plural(n, "replica", "replicas")+" not in sync")
	}
	if row.QuorumUnreachable {
		out = append(out, fmt.Sprintf("leader %d unreachable", row.Leader))
	}
	local := row.Local != nil && len(row.Local.Rows) > 0
	if l := row.Local; l != nil {
		if l.Fenced {
			out = append(out, "local replica vote-fenced")
		}
		if l.Damaged {
			out = append(out, "local replica under repair")
		}
		for _, m := range l.Rows {
			if m.Behind {
				out = append(out, fmt.Sprintf("member %d behind (%s, %d entries)", m.ID, m.State, m.Lag))
			}
		}
	}
	if !local { // the leader's own view when this broker is not the leader
		for _, m := range row.Quorum {
			if m.Behind {
				out = append(out, fmt.Sprintf("member %d behind (%d entries, caught up %s)", m.ID, m.Lag, agoMs(m.CaughtUpAgoMs)))
			}
		}
	}
	return out
}

// u64s formats Raft member ids.
func u64s(xs []uint64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}
