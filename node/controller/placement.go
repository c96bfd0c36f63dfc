package controller

import (
	"crypto/sha256"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Place chooses replicas for n new partitions numbered from first, with rf
// replicas each, over the brokers for which eligible returns true.
//
// Brokers are ordered so that consecutive ones sit on different racks
// (Kafka's rack-alternating order). Partition i's first replica (its
// preferred leader) is the broker at a rotating position in that order, so
// leaders spread evenly; its other replicas are the next brokers in the
// order whose rack holds none of its replicas yet, until every rack holds
// one (then any broker not chosen). So a partition's replicas span
// min(rf, racks) racks even when racks have different sizes. The rotation
// starts after the partitions the cluster already has, so topics do not all
// pile their first replica onto the lowest broker id.
func (s *State) Place(n, rf int, first int32, eligible func(id int32) bool) ([]Partition, error) {
	order := s.rackAlternating(eligible)
	if rf <= 0 || n <= 0 || rf > len(order) {
		return nil, kerr.InvalidReplicationFactor
	}
	racks := map[string]bool{}
	for _, id := range order {
		racks[s.Brokers[id].Rack] = true
	}
	start := s.partitionCount()
	out := make([]Partition, n)
	for i := 0; i < n; i++ {
		p := Partition{Index: first + int32(i), Leader: -1, LeaderEpoch: -1}
		shift := (start + i) % len(order)
		chosen := map[int32]bool{}
		used := map[string]bool{}
		take := func(id int32) {
			p.Replicas = append(p.Replicas, id)
			chosen[id] = true
			used[s.Brokers[id].Rack] = true
		}
		take(order[shift])
		for j := 1; j < len(order) && len(p.Replicas) < rf; j++ {
			id := order[(shift+j)%len(order)]
			if !used[s.Brokers[id].Rack] {
				take(id)
			}
		}
		for j := 1; j < len(order) && len(p.Replicas) < rf; j++ {
			if id := order[(shift+j)%len(order)]; !chosen[id] {
				take(id)
			}
		}
		out[i] = p
	}
	return out, nil
}

func (s *State) partitionCount() int {
	n := 0
	for _, name := range s.TopicNames() {
		n += len(s.Topics[name].Partitions)
	}
	return n
}

// rackAlternating returns eligible broker ids ordered rack by rack in turn:
// r1's first, r2's first, ..., r1's second, ... Brokers without a rack form
// one rack named "".
func (s *State) rackAlternating(eligible func(int32) bool) []int32 {
	byRack := map[string][]int32{}
	var racks []string
	for _, id := range s.BrokerIDs() {
		b := s.Brokers[id]
		if b.Decommissioned || (eligible != nil && !eligible(id)) {
			continue
		}
		if _, ok := byRack[b.Rack]; !ok {
			racks = append(racks, b.Rack)
		}
		byRack[b.Rack] = append(byRack[b.Rack], id)
	}
	sort.Strings(racks)
	var order []int32
	for i := 0; ; i++ {
		added := false
		for _, r := range racks {
			if i < len(byRack[r]) {
				order = append(order, byRack[r][i])
				added = true
			}
		}
		if !added {
			return order
		}
	}
}

// topicID derives a topic's id from the cluster id, its name and its first
// group id: unique, and the same on every broker that applies the command.
func (s *State) topicID(name string, group uint64) [16]byte {
	h := sha256.New()
	h.Write([]byte(s.ClusterID))
	h.Write([]byte{0})
	h.Write([]byte(name))
	h.Write([]byte{0, byte(group >> 56), byte(group >> 48), byte(group >> 40), byte(group >> 32),
		byte(group >> 24), byte(group >> 16), byte(group >> 8), byte(group)})
	var id [16]byte
	copy(id[:], h.Sum(nil))
	return id
}
