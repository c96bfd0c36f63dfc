package controller

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/node/acl"
)

// Command is one metadata change, the payload of a controller log entry.
// Exactly one of the pointer fields is set. ReqID ties the command to the
// broker that asked for it: that broker answers its client when it applies
// the entry.
type Command struct {
	ReqID string `json:"req_id,omitempty"`

	RegisterBroker   *Broker           `json:"register_broker,omitempty"`
	Decommission     *int32            `json:"decommission,omitempty"`
	CreateTopic      *Topic            `json:"create_topic,omitempty"`
	DeleteTopic      *string           `json:"delete_topic,omitempty"`
	CreatePartitions *CreatePartitions `json:"create_partitions,omitempty"`
	AlterConfigs     *AlterConfigs     `json:"alter_configs,omitempty"`
	ReportLeaders    []LeaderReport    `json:"report_leaders,omitempty"`
	AllocProducerIDs *int32            `json:"alloc_producer_ids,omitempty"`
	Reassign         *Reassign         `json:"reassign,omitempty"`
	SetReplicas      *SetReplicas      `json:"set_replicas,omitempty"`
	CreateACLs       []acl.Binding     `json:"create_acls,omitempty"`
	DeleteACLs       []acl.Filter      `json:"delete_acls,omitempty"`
	ChangeRole       *RoleChange       `json:"change_role,omitempty"`
	AlterUser        *AlterUser        `json:"alter_user,omitempty"`
	BootstrapUsers   *BootstrapUsers   `json:"bootstrap_users,omitempty"`
	Prefer           *Prefer           `json:"prefer,omitempty"`
	ReportSizes      []SizeReport      `json:"report_sizes,omitempty"`
	AlterClientQuota *AlterClientQuota `json:"alter_client_quota,omitempty"`
	// RefuseVoterChange records a refused controller voter change
	// (voters.go).
	RefuseVoterChange *VoterRefusal `json:"refuse_voter_change,omitempty"`
}

// CreatePartitions adds partitions (already placed) to a topic.
type CreatePartitions struct {
	Topic      string      `json:"topic"`
	Partitions []Partition `json:"partitions"`
}

// AlterConfigs changes a topic's configs (Topic set) or the broker-wide
// defaults (Topic empty). Set entries are written, Delete entries removed;
// when Replace is set, every other key is removed (the non-incremental
// AlterConfigs API).
type AlterConfigs struct {
	Topic string `json:"topic,omitempty"`
	Group string `json:"group,omitempty"` // a group's configs (GROUP resources) instead of a topic's

	Set     map[string]string `json:"set,omitempty"`
	Delete  []string          `json:"delete,omitempty"`
	Replace bool              `json:"replace,omitempty"`
}

// LeaderReport records who leads a partition group, as its Raft told the
// reporting leader.
type LeaderReport struct {
	Group  uint64 `json:"group"`
	Leader int32  `json:"leader"`
	Epoch  int32  `json:"epoch"`
}

// SizeReport records a partition group's log size in bytes, as its
// leader measured it: the balancer's load goal (balance.go) reads it.
type SizeReport struct {
	Group uint64 `json:"group"`
	Bytes int64  `json:"bytes"`
}

// Reassign starts (Target non-empty) or cancels (Target empty) moving a
// partition to a new replica set.
type Reassign struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Target    []int32 `json:"target"`
	// Balancer marks a move the balancer proposed (balance.go): it is
	// refused unless the partition is settled at reassignment epoch
	// IfEpoch (the state the balancer planned from) and every target
	// broker is still in service, so it never overrides an operator's move
	// that got in first; and unless fewer than MovesMax reassignments
	// are in flight, so the balancer's bound holds whatever raced with
	// its plan (a deposed controller leader's proposal resent, say).
	Balancer bool  `json:"balancer,omitempty"`
	IfEpoch  int32 `json:"if_epoch,omitempty"`
	MovesMax int   `json:"moves_max,omitempty"`
}

// SetReplicas records the replica set a partition's Raft group now has
// (the partition leader reports each membership step).
type SetReplicas struct {
	Group    uint64  `json:"group"`
	Replicas []int32 `json:"replicas"`
	// Epoch is the partition's ReassignEpoch the leader acted on; the
	// report is refused (REASSIGNMENT_IN_PROGRESS) if the
	// membership was changed since. Zero: a report written before epochs
	// existed, accepted as then.
	Epoch int32 `json:"epoch,omitempty"`
}

// ProducerIDBlock is how many producer ids one AllocProducerIDs hands out.
const ProducerIDBlock = 1000

// Result is what applying a command produced.
type Result struct {
	Err error
	// ProducerIDBase is the first id of an allocated block.
	ProducerIDBase int64
	// DeletedACLs is what a DeleteACLs command removed, per filter.
	DeletedACLs *DeleteACLsResult
}

// Encode encodes c for the log.
func (c *Command) Encode() []byte {
	b, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("controller: command does not encode: %v", err)) // a bug
	}
	return b
}

// DecodeCommand decodes a log entry.
func DecodeCommand(b []byte) (*Command, error) {
	var c Command
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("controller: command: %w", err)
	}
	return &c, nil
}

// ReportOnly says whether Apply takes the command for a leader or size
// report, which changes only partitions' Leader, LeaderEpoch and Bytes
// (Apply takes the first command a Command holds, in the order below).
func (c *Command) ReportOnly() bool {
	return c.RegisterBroker == nil && c.Decommission == nil && c.CreateTopic == nil && c.DeleteTopic == nil &&
		c.CreatePartitions == nil && c.AlterConfigs == nil && (len(c.ReportLeaders) > 0 || len(c.ReportSizes) > 0)
}

// Apply applies one command. It never fails halfway: a command that is not
// valid against the current state changes nothing and returns its error.
func (s *State) Apply(c *Command) Result {
	switch {
	case c.RegisterBroker != nil:
		b := *c.RegisterBroker
		if b.ID <= 0 {
			return Result{Err: kerr.InvalidRequest}
		}
		b.Listeners = slices.Clone(b.Listeners)
		b.FenceBelow = 0
		if old, ok := s.Brokers[b.ID]; ok {
			b.Decommissioned = old.Decommissioned
			b.FenceBelow = old.FenceBelow
			switch {
			case b.DiskID == "":
				b.DiskID = old.DiskID // a broker from before disk ids
			case old.DiskID != "" && old.DiskID != b.DiskID:
				// The broker's disk was replaced: every group that exists
				// now may have had it as a voter (node/disk.go).
				b.FenceBelow = s.NextGroup
			}
		}
		s.Brokers[b.ID] = &b
	case c.Decommission != nil:
		b, ok := s.Brokers[*c.Decommission]
		if !ok {
			return Result{Err: kerr.BrokerNotAvailable}
		}
		if !b.Decommissioned {
			if err := s.checkDecommission(b.ID); err != nil {
				return Result{Err: err}
			}
		}
		b.Decommissioned = true
	case c.CreateTopic != nil:
		return s.createTopic(c.CreateTopic)
	case c.DeleteTopic != nil:
		t, ok := s.Topics[*c.DeleteTopic]
		if !ok {
			return Result{Err: kerr.UnknownTopicOrPartition}
		}
		for _, p := range t.Partitions {
			delete(s.byGroup, p.Group)
		}
		delete(s.Topics, t.Name)
	case c.CreatePartitions != nil:
		return s.createPartitions(c.CreatePartitions)
	case c.AlterConfigs != nil:
		return s.alterConfigs(c.AlterConfigs)
	case len(c.ReportLeaders) > 0:
		for _, r := range c.ReportLeaders {
			// A report from a broker outside the replica set is stale (a
			// replica removed since); Metadata never names it.
			if _, p, ok := s.PartitionByGroup(r.Group); ok && r.Epoch >= p.LeaderEpoch &&
				(slices.Contains(p.Replicas, r.Leader) || slices.Contains(p.Target, r.Leader)) {
				p.Leader, p.LeaderEpoch = r.Leader, r.Epoch
			}
		}
	case len(c.ReportSizes) > 0:
		for _, r := range c.ReportSizes {
			if _, p, ok := s.PartitionByGroup(r.Group); ok && r.Bytes >= 0 {
				p.Bytes = r.Bytes
			}
		}
	case c.AllocProducerIDs != nil:
		base := s.NextProducerID
		s.NextProducerID += ProducerIDBlock
		return Result{ProducerIDBase: base}
	case c.Reassign != nil:
		return s.reassign(c.Reassign)
	case len(c.CreateACLs) > 0:
		return s.createACLs(c.CreateACLs)
	case len(c.DeleteACLs) > 0:
		return s.deleteACLs(c.DeleteACLs)
	case c.ChangeRole != nil:
		return s.changeRole(c.ChangeRole)
	case c.SetReplicas != nil:
		return s.setReplicas(c.SetReplicas)
	case c.AlterUser != nil:
		return s.alterUser(c.AlterUser)
	case c.BootstrapUsers != nil:
		return s.bootstrapUsers(c.BootstrapUsers)
	case c.Prefer != nil:
		return s.prefer(c.Prefer)
	case c.AlterClientQuota != nil:
		return s.alterClientQuota(c.AlterClientQuota)
	case c.RefuseVoterChange != nil:
		return s.refuseVoterChange(c.RefuseVoterChange)
	default:
		return Result{Err: kerr.InvalidRequest}
	}
	return Result{}
}

func (s *State) createTopic(t *Topic) Result {
	if err := ValidateTopicName(t.Name); err != nil {
		return Result{Err: err}
	}
	if _, ok := s.Topics[t.Name]; ok {
		return Result{Err: kerr.TopicAlreadyExists}
	}
	if len(t.Partitions) == 0 {
		return Result{Err: kerr.InvalidPartitions}
	}
	if err := s.checkNewPartitions(t.Partitions, 0); err != nil {
		return Result{Err: err}
	}
	nt := *t
	nt.Partitions = append([]Partition(nil), t.Partitions...)
	nt.Configs = copyMap(t.Configs)
	s.Topics[nt.Name] = &nt
	for i := range nt.Partitions {
		nt.Partitions[i].Group = s.takeGroup()
		nt.Partitions[i].Leader, nt.Partitions[i].LeaderEpoch = -1, -1
		s.byGroup[nt.Partitions[i].Group] = groupRef{topic: nt.Name, index: i}
	}
	if nt.ID == ([16]byte{}) {
		nt.ID = s.topicID(nt.Name, nt.Partitions[0].Group)
	}
	return Result{}
}

func (s *State) createPartitions(c *CreatePartitions) Result {
	t, ok := s.Topics[c.Topic]
	if !ok {
		return Result{Err: kerr.UnknownTopicOrPartition}
	}
	if err := s.checkNewPartitions(c.Partitions, int32(len(t.Partitions))); err != nil {
		return Result{Err: err}
	}
	for _, p := range c.Partitions {
		p.Group = s.takeGroup()
		p.Leader, p.LeaderEpoch = -1, -1
		t.Partitions = append(t.Partitions, p)
		s.byGroup[p.Group] = groupRef{topic: t.Name, index: len(t.Partitions) - 1}
	}
	return Result{}
}

// takeGroup hands out the next Raft group id. Apply assigns group ids, not
// the proposer, so two creations racing through the log never collide.
func (s *State) takeGroup() uint64 {
	g := s.NextGroup
	s.NextGroup++
	return g
}

// checkNewPartitions validates placed partitions numbered from first.
func (s *State) checkNewPartitions(ps []Partition, first int32) error {
	for i, p := range ps {
		if p.Index != first+int32(i) || len(p.Replicas) == 0 {
			return kerr.InvalidReplicaAssignment
		}
		seen := map[int32]bool{}
		for _, r := range p.Replicas {
			if _, ok := s.Brokers[r]; !ok || seen[r] {
				return kerr.InvalidReplicaAssignment
			}
			seen[r] = true
		}
	}
	return nil
}

func (s *State) alterConfigs(a *AlterConfigs) Result {
	var cfg map[string]string
	if a.Group != "" {
		if s.GroupConfigs == nil {
			s.GroupConfigs = map[string]map[string]string{}
		}
		if s.GroupConfigs[a.Group] == nil {
			s.GroupConfigs[a.Group] = map[string]string{}
		}
		cfg = s.GroupConfigs[a.Group]
		defer func() {
			if len(cfg) == 0 {
				delete(s.GroupConfigs, a.Group)
			}
		}()
	} else if a.Topic == "" {
		if s.BrokerConfigs == nil {
			s.BrokerConfigs = map[string]string{}
		}
		cfg = s.BrokerConfigs
	} else {
		t, ok := s.Topics[a.Topic]
		if !ok {
			return Result{Err: kerr.UnknownTopicOrPartition}
		}
		if t.Configs == nil {
			t.Configs = map[string]string{}
		}
		cfg = t.Configs
	}
	if a.Replace {
		for k := range cfg { //floe:unordered deleting every key; order is invisible
			if _, keep := a.Set[k]; !keep {
				delete(cfg, k)
			}
		}
	}
	keys := make([]string, 0, len(a.Set))
	for k := range a.Set { //floe:unordered sorted below
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cfg[k] = a.Set[k]
	}
	for _, k := range a.Delete {
		delete(cfg, k)
	}
	return Result{}
}

func (s *State) reassign(r *Reassign) Result {
	t, ok := s.Topics[r.Topic]
	if !ok || r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
		return Result{Err: kerr.UnknownTopicOrPartition}
	}
	p := &t.Partitions[r.Partition]
	if len(r.Target) == 0 {
		if p.Target == nil {
			return Result{Err: kerr.NoReassignmentInProgress}
		}
		p.Target = nil
		p.BalancerMove = false
		p.Unsettled = true
		p.ReassignEpoch++
		return Result{}
	}
	if err := s.checkReplicaList(r.Target); err != nil {
		return Result{Err: err}
	}
	if r.Balancer {
		if err := s.checkBalancerMove(p, r); err != nil {
			return Result{Err: err}
		}
	}
	hadTarget := p.Target != nil
	p.BalancerMove = r.Balancer
	p.Target = append([]int32(nil), r.Target...)
	if sameSet(p.Target, p.Replicas) {
		// Back to where it is: a cancellation if a walk was under way.
		p.Target = nil
		p.BalancerMove = false
		if hadTarget {
			p.Unsettled = true
			p.ReassignEpoch++
		}
		return Result{}
	}
	p.Moved = true
	p.ReassignEpoch++
	return Result{}
}

// setReplicas records a partition leader's report that its group's
// committed membership is sr.Replicas. A report made at an older epoch is
// refused: the leader acted on a target that has been replaced or
// cancelled since, and recording it would tell brokers of the current
// walk to delete replicas the group still counts on.
func (s *State) setReplicas(sr *SetReplicas) Result {
	_, p, ok := s.PartitionByGroup(sr.Group)
	if !ok {
		return Result{Err: kerr.UnknownTopicOrPartition}
	}
	if sr.Epoch != 0 && sr.Epoch != p.ReassignEpoch {
		return Result{Err: kerr.ReassignmentInProgress}
	}
	if err := s.checkReplicaList(sr.Replicas); err != nil {
		return Result{Err: err}
	}
	p.Replicas = append([]int32(nil), sr.Replicas...)
	p.Moved = true
	if sameSet(p.Replicas, p.Target) {
		p.Target = nil
		p.BalancerMove = false
	}
	if p.Target == nil {
		p.Unsettled = false
	}
	p.ReassignEpoch++
	return Result{}
}

// checkReplicaList requires a non-empty list of distinct registered brokers.
func (s *State) checkReplicaList(ids []int32) error {
	if len(ids) == 0 {
		return kerr.InvalidReplicaAssignment
	}
	seen := map[int32]bool{}
	for _, b := range ids {
		if _, ok := s.Brokers[b]; !ok || seen[b] {
			return kerr.InvalidReplicaAssignment
		}
		seen[b] = true
	}
	return nil
}

func sameSet(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[int32]bool{}
	for _, x := range a {
		m[x] = true
	}
	for _, x := range b {
		if !m[x] {
			return false
		}
	}
	return true
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m { //floe:unordered copying; order is invisible
		c[k] = v
	}
	return c
}

// ValidateTopicName applies Kafka's topic name rules.
func ValidateTopicName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > 249 {
		return kerr.InvalidTopicException
	}
	for _, c := range name {
		ok := c == '.' || c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		if !ok {
			return kerr.InvalidTopicException
		}
	}
	return nil
}
