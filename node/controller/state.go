package controller

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"sort"

	"github.com/floe-broker/floe/node/acl"
)

// Broker is a registered broker.
type Broker struct {
	ID        int32  `json:"id"`
	KafkaHost string `json:"kafka_host"`
	KafkaPort int32  `json:"kafka_port"`
	RaftAddr  string `json:"raft_addr"`
	Rack      string `json:"rack,omitempty"`
	// Listeners are the advertised address of each Kafka listener, by
	// listener name; Metadata answers a client with the addresses of the
	// listener it came in on. KafkaHost and KafkaPort are the first one's
	// (or the only address, for a broker registered without listeners).
	Listeners []Endpoint `json:"listeners,omitempty"`
	// Decommissioned brokers get no new replicas and leave Metadata once
	// they hold none.
	Decommissioned bool `json:"decommissioned,omitempty"`
	// DiskID is the disk id of the data directory the broker last
	// registered with (node/disk.go); empty for a broker from before disk
	// ids.
	DiskID string `json:"disk_id,omitempty"`
	// FenceBelow, set when the broker registered with a new disk id after
	// an old one, is the next partition group id at that moment: the
	// broker's replicas of groups below it start fenced (node/disk.go).
	FenceBelow uint64 `json:"fence_below,omitempty"`
	// Incarnation is the random id the registering broker process drew
	// at start (node/dupid.go): the controller leader refuses a join under
	// this broker id from another incarnation while it still hears from
	// this one. Zero: a broker from before incarnations, never refused.
	Incarnation uint64 `json:"incarnation,omitempty"`
}

// Endpoint is one listener's advertised address.
type Endpoint struct {
	Name string `json:"name"`
	Host string `json:"host"`
	Port int32  `json:"port"`
}

// Address returns the broker's address on the named listener. A broker
// registered without listeners has one address for every listener; one
// with listeners has none for a name it lacks (Kafka then leaves it out of
// that listener's Metadata). An empty name is the default address.
func (b *Broker) Address(listener string) (host string, port int32, ok bool) {
	if listener == "" || len(b.Listeners) == 0 {
		return b.KafkaHost, b.KafkaPort, true
	}
	for _, e := range b.Listeners {
		if e.Name == listener {
			return e.Host, e.Port, true
		}
	}
	return "", 0, false
}

// Equal reports whether two registrations are the same.
func (b *Broker) Equal(o *Broker) bool {
	return b.ID == o.ID && b.KafkaHost == o.KafkaHost && b.KafkaPort == o.KafkaPort && b.RaftAddr == o.RaftAddr &&
		b.Rack == o.Rack && b.Decommissioned == o.Decommissioned && slices.Equal(b.Listeners, o.Listeners) &&
		b.DiskID == o.DiskID && b.FenceBelow == o.FenceBelow && b.Incarnation == o.Incarnation
}

// Partition is one partition's placement and last reported leader.
//
// Invariant: Replicas has no duplicates; when Target is set, a reassignment
// is in progress towards it.
type Partition struct {
	Index       int32   `json:"index"`
	Group       uint64  `json:"group"`
	Replicas    []int32 `json:"replicas"`
	Target      []int32 `json:"target,omitempty"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	// Moved is set once the replica set has changed since creation: a
	// fresh replica may then no longer bootstrap the group itself.
	Moved bool `json:"moved,omitempty"`
	// ReassignEpoch counts the membership commands applied to the
	// partition (Reassign, SetReplicas). A SetReplicas report names the
	// epoch its leader acted on and is refused once another command has
	// changed the partition's membership since: a report delayed in
	// flight describes a walk the controller no longer asks for.
	ReassignEpoch int32 `json:"reassign_epoch,omitempty"`
	// Unsettled is set when a reassignment is cancelled and cleared when
	// the partition's leader reports (SetReplicas) that its committed
	// membership is Replicas again. Until then a broker outside Replicas
	// may still be a member of the group, and must keep its replica.
	Unsettled bool `json:"unsettled,omitempty"`
	// BalancerMove is set while Target is a move the balancer proposed
	// (balance.go), not an operator's.
	BalancerMove bool `json:"balancer_move,omitempty"`
	// Bytes is the size of the partition's log as its leader last
	// reported it (ReportSizes); the balancer's load goal reads it.
	Bytes int64 `json:"bytes,omitempty"`
}

// Settled reports whether Replicas is the group's committed membership as
// its leader last reported it: no reassignment in progress or cancelled
// and not yet walked back. Only then may a broker outside Replicas delete
// its replica on the controller's word alone.
func (p Partition) Settled() bool { return p.Target == nil && !p.Unsettled }

// Topic is a topic's metadata.
type Topic struct {
	Name       string            `json:"name"`
	ID         [16]byte          `json:"id"`
	Partitions []Partition       `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
	Internal   bool              `json:"internal,omitempty"`
}

// State is the whole cluster metadata.
type State struct {
	ClusterID      string            `json:"cluster_id"`
	Brokers        map[int32]*Broker `json:"brokers"`
	Topics         map[string]*Topic `json:"topics"`
	NextGroup      uint64            `json:"next_group"`
	NextProducerID int64             `json:"next_producer_id"`
	BrokerConfigs  map[string]string `json:"broker_configs,omitempty"`
	// GroupConfigs are the dynamic configs of groups (GROUP resources,
	// share.* configs), by group name.
	GroupConfigs map[string]map[string]string `json:"group_configs,omitempty"`
	// ACLs and Roles: security.go.
	ACLs  []acl.Binding    `json:"acls,omitempty"`
	Roles map[string]*Role `json:"roles,omitempty"`
	// Users holds the SCRAM credentials, by user name (users.go).
	Users map[string]*User `json:"users,omitempty"`
	// UsersBootstrapped is set once BootstrapUsers applied.
	UsersBootstrapped bool `json:"users_bootstrapped,omitempty"`
	// ClientQuotas are the client quotas, sorted by entity key
	// (quotas.go).
	ClientQuotas []ClientQuota `json:"client_quotas,omitempty"`
	// VoterRefusals are the latest refused controller voter changes
	// (voters.go).
	VoterRefusals []VoterRefusal              `json:"voter_refusals,omitempty"`
	byGroup       map[uint64]groupRef         // derived, rebuilt on restore
	sec           securityIndex               // derived from ACLs and Roles
	quotaIndex    map[quotaSlot]indexedQuota  // derived from ClientQuotas (quotas.go)
	ipQuotaIndex  map[netip.Addr]indexedQuota // ip entities; the zero Addr is the default ip (quotas.go)
}

type groupRef struct {
	topic string
	index int
}

// FirstPartitionGroup is the first Raft group id handed to a partition;
// lower ids are reserved (the controller group is ControllerGroup).
const (
	ControllerGroup     uint64 = 1
	FirstPartitionGroup uint64 = 16
)

// NewState returns the empty metadata of a new cluster.
func NewState(clusterID string) *State {
	return &State{
		ClusterID: clusterID, Brokers: map[int32]*Broker{}, Topics: map[string]*Topic{},
		NextGroup: FirstPartitionGroup, NextProducerID: 1000, byGroup: map[uint64]groupRef{},
	}
}

// Snapshot encodes the state (encoding/json sorts map keys, so the bytes
// are deterministic).
func (s *State) Snapshot() []byte {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("controller: state does not encode: %v", err)) // a bug, not input
	}
	return b
}

// Restore decodes a snapshot.
func Restore(b []byte) (*State, error) {
	s := NewState("")
	if len(b) == 0 {
		return s, nil
	}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("controller: snapshot: %w", err)
	}
	if s.Brokers == nil {
		s.Brokers = map[int32]*Broker{}
	}
	if s.Topics == nil {
		s.Topics = map[string]*Topic{}
	}
	for id, b := range s.Brokers { //floe:unordered validation only; the first error found is as good as any
		if b == nil || b.ID != id {
			return nil, fmt.Errorf("controller: snapshot: broker %d is malformed", id)
		}
	}
	for name, t := range s.Topics { //floe:unordered validation only
		if t == nil || t.Name != name {
			return nil, fmt.Errorf("controller: snapshot: topic %q is malformed", name)
		}
	}
	if err := s.validateSecurity(); err != nil {
		return nil, fmt.Errorf("controller: snapshot: %w", err)
	}
	if err := s.checkUsers(); err != nil {
		return nil, err
	}
	if err := s.checkQuotas(); err != nil {
		return nil, err
	}
	s.quotasChanged()
	s.reindex()
	s.securityChanged()
	return s, nil
}

func errMalformedUser(name string) error {
	return fmt.Errorf("controller: snapshot: user %q is malformed", name)
}

func (s *State) reindex() {
	s.byGroup = map[uint64]groupRef{}
	for _, name := range s.TopicNames() {
		for i, p := range s.Topics[name].Partitions {
			s.byGroup[p.Group] = groupRef{topic: name, index: i}
		}
	}
}

// TopicNames returns topic names, sorted.
func (s *State) TopicNames() []string {
	names := make([]string, 0, len(s.Topics))
	for n := range s.Topics { //floe:unordered sorted below
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// BrokerIDs returns broker ids, sorted.
func (s *State) BrokerIDs() []int32 {
	ids := make([]int32, 0, len(s.Brokers))
	for id := range s.Brokers { //floe:unordered sorted below
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// PartitionByGroup finds the partition a Raft group replicates.
func (s *State) PartitionByGroup(g uint64) (*Topic, *Partition, bool) {
	ref, ok := s.byGroup[g]
	if !ok {
		return nil, nil, false
	}
	t := s.Topics[ref.topic]
	return t, &t.Partitions[ref.index], true
}

// Clone returns a deep copy (for readers outside the reactor).
func (s *State) Clone() *State {
	c, err := Restore(s.Snapshot())
	if err != nil {
		panic(err) // a bug: our own snapshot must decode
	}
	return c
}
