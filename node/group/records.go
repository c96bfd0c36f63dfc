package group

// The records of __consumer_offsets, in Kafka's formats so Kafka tooling
// can read the topic:
//
//	offset commit    key   OffsetCommitKey    version 1: group, topic, partition
//	                 value OffsetCommitValue  version 3: offset, leader epoch,
//	                                          metadata, commit timestamp
//	group metadata   key   GroupMetadataKey   version 2: group
//	                 value GroupMetadataValue version 3: protocol type,
//	                                          generation, protocol, leader,
//	                                          state timestamp, members (id,
//	                                          instance id, client, timeouts,
//	                                          subscription, assignment)
//
// The key's leading int16 version tells the two apart (0-1 offset commit,
// 2 group metadata). A null value is a tombstone. Compaction keeps the last
// record per key, so replaying the log in order and keeping the last value
// per key rebuilds the coordinator's state.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func offsetKey(group string, tp topicPartition) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version = 1
	k.Group, k.Topic, k.Partition = group, tp.topic, tp.partition
	return k.AppendTo(nil)
}

func offsetValue(v committed) []byte {
	ov := kmsg.NewOffsetCommitValue()
	ov.Version = 3
	ov.Offset, ov.LeaderEpoch, ov.Metadata, ov.CommitTimestamp = v.offset, v.leaderEpoch, v.metadata, v.timestamp
	return ov.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version = 2
	k.Group = group
	return k.AppendTo(nil)
}

// ErrUnknownRecord is returned by Replay for a key it does not know (a
// newer record kind); the record is skipped.
var ErrUnknownRecord = errors.New("group: unknown __consumer_offsets record")

// Replay applies one committed record of the partition, in log order,
// before Start. A record that does not decode changes nothing and returns
// an error (the caller logs it and goes on).
func (c *Coordinator) Replay(key, value []byte) error {
	if len(key) < 2 {
		return fmt.Errorf("group: record key of %d bytes", len(key))
	}
	switch v := int16(binary.BigEndian.Uint16(key)); v {
	case 0, 1:
		return c.replayOffset(key, value)
	case 2:
		return c.replayGroup(key, value)
	case ConsumerKeyVersion:
		return c.replayConsumer(key, value)
	default:
		return fmt.Errorf("%w: key version %d", ErrUnknownRecord, v)
	}
}

func (c *Coordinator) replayOffset(key, value []byte) error {
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Errorf("group: offset key: %w", err)
	}
	tp := topicPartition{k.Topic, k.Partition}
	if value == nil {
		if g := c.groups[k.Group]; g != nil {
			delete(g.offsets, tp)
			c.forgetIfEmpty(g)
		}
		return nil
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(value); err != nil {
		return fmt.Errorf("group: offset value: %w", err)
	}
	g := c.loadedGroup(k.Group)
	epoch := v.LeaderEpoch
	if v.Version < 3 {
		epoch = -1
	}
	g.offsets[tp] = committed{offset: v.Offset, leaderEpoch: epoch, metadata: v.Metadata, timestamp: v.CommitTimestamp}
	return nil
}

func (c *Coordinator) replayGroup(key, value []byte) error {
	var k kmsg.GroupMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Errorf("group: metadata key: %w", err)
	}
	if value == nil {
		if g := c.groups[k.Group]; g != nil {
			resetMembership(g)
			g.persisted = false
			c.forgetIfEmpty(g)
		}
		return nil
	}
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return fmt.Errorf("group: metadata value: %w", err)
	}
	g := c.loadedGroup(k.Group)
	resetMembership(g)
	g.persisted = true
	g.cons = nil // the group went back to classic
	g.protocolType, g.generation, g.stateMillis = v.ProtocolType, v.Generation, v.CurrentStateTimestamp
	if v.Protocol != nil && len(v.Members) > 0 {
		p := *v.Protocol
		g.protocol = &p
	}
	// The record's bytes are the log reader's buffer: keep copies, or the
	// loaded group pins a whole read chunk (up to a MiB) per member.
	for _, vm := range v.Members {
		vm.Assignment, vm.Subscription = bytes.Clone(vm.Assignment), bytes.Clone(vm.Subscription)
		m := &member{
			id: vm.MemberID, instanceID: vm.InstanceID, clientID: vm.ClientID, clientHost: vm.ClientHost,
			rebalance: millis(vm.RebalanceTimeoutMillis), session: millis(vm.SessionTimeoutMillis),
			protocolType: v.ProtocolType, assignment: vm.Assignment, synced: vm.Assignment,
		}
		if v.Version == 0 {
			m.rebalance = m.session
		}
		if g.protocol != nil {
			m.protocols = []protocol{{name: *g.protocol, metadata: vm.Subscription}}
		}
		g.add(m)
	}
	if v.Leader != nil && g.byID[*v.Leader] != nil {
		g.leader = *v.Leader
	}
	if len(g.members) > 0 {
		g.state = Stable
	}
	return nil
}

// loadedGroup returns the group a replayed record belongs to, creating it.
func (c *Coordinator) loadedGroup(name string) *group {
	g := c.groups[name]
	if g == nil {
		g = newGroup(name)
		c.groups[name] = g
	}
	return g
}

// resetMembership empties a group being replayed before its next metadata
// record (or tombstone) applies.
func resetMembership(g *group) {
	for _, m := range g.members {
		m.gone = true
	}
	g.members, g.byID, g.static = nil, map[string]*member{}, map[string]string{}
	g.leader, g.protocol, g.protocolType, g.generation = "", nil, "", 0
	g.awaitingJoin = 0
	g.state = Empty
}

// forgetIfEmpty drops a replayed group that neither metadata nor offsets
// keep alive any more.
func (c *Coordinator) forgetIfEmpty(g *group) {
	if !g.persisted && len(g.offsets) == 0 && g.cons == nil {
		delete(c.groups, g.name)
	}
}
