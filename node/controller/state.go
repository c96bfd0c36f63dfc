package controller

import (
	"encoding/json"
	"fmt"
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
	// Decommissioned brokers get no new replicas and leave Metadata once
	// they hold none.
	Decommissioned bool `json:"decommissioned,omitempty"`
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
}

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
	// ACLs and Roles: security.go.
	ACLs    []acl.Binding       `json:"acls,omitempty"`
	Roles   map[string]*Role    `json:"roles,omitempty"`
	byGroup map[uint64]groupRef // derived, rebuilt on restore
	sec     securityIndex       // derived from ACLs and Roles
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
	s.reindex()
	s.securityChanged()
	return s, nil
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
