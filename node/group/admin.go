package group

// ListGroups (key 16), DescribeGroups (key 15) and DeleteGroups (key 42),
// one coordinator's share of each: the node asks every local coordinator
// and merges.
//
// DescribeGroups shows a member's metadata and assignment, and the group's
// protocol, only while the group is Stable (as Kafka does); an unknown
// group is described as Dead with no error (v0-5). DeleteGroups deletes
// only groups without members (NON_EMPTY_GROUP otherwise): the group leaves
// the coordinator at once and tombstones for its metadata and every
// committed offset are written; the answer waits for them to commit.

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupOperations is the ACL operation bitfield DescribeGroups reports
// when asked: READ (3), DELETE (6) and DESCRIBE (8). Floe has no ACLs yet,
// so every client may do all of them.
const groupOperations = 1<<3 | 1<<6 | 1<<8

// ListGroups lists the coordinator's groups, sorted by name. A non-empty
// states filter keeps groups whose state matches one of them (ignoring
// case, as Kafka does).
func (c *Coordinator) ListGroups(states []string) []kmsg.ListGroupsResponseGroup {
	var out []kmsg.ListGroupsResponseGroup
	for _, name := range c.groupNames() {
		g := c.groups[name]
		state, typ := g.state.String(), "classic"
		if g.cons != nil {
			state, typ = g.cons.stateName(), "consumer"
		}
		if len(states) > 0 && !matchesState(state, states) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState = name, g.protocolType, state
		lg.GroupType = typ
		out = append(out, lg)
	}
	return out
}

func matchesState(s string, states []string) bool {
	for _, want := range states {
		if strings.EqualFold(want, s) {
			return true
		}
	}
	return false
}

// DescribeGroup describes one group.
func (c *Coordinator) DescribeGroup(name string, includeOperations bool) kmsg.DescribeGroupsResponseGroup {
	out := kmsg.NewDescribeGroupsResponseGroup()
	out.Group = name
	if includeOperations {
		out.AuthorizedOperations = groupOperations
	}
	g := c.groups[name]
	if g == nil {
		out.State = Dead.String()
		return out
	}
	if g.cons != nil {
		out.ErrorCode = kerr.GroupIDNotFound.Code
		out.ErrorMessage = kmsg.StringPtr("Group " + name + " is not a classic group (ConsumerGroupDescribe describes it)")
		out.State = ""
		return out
	}
	out.State, out.ProtocolType = g.state.String(), g.protocolType
	stable := g.state == Stable && g.protocol != nil
	if stable {
		out.Protocol = *g.protocol
	}
	for _, m := range g.members {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID = m.id, m.instanceID
		dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
		if stable {
			dm.ProtocolMetadata = m.metadataFor(*g.protocol)
			dm.MemberAssignment = m.assignment
		}
		out.Members = append(out.Members, dm)
	}
	return out
}

// DeleteGroup deletes an empty group; done is called exactly once with the
// group's error code, after the tombstones are durable or failed.
func (c *Coordinator) DeleteGroup(now time.Duration, name string, done func(code int16)) {
	g := c.groups[name]
	switch {
	case name == "":
		done(kerr.InvalidGroupID.Code)
		return
	case g == nil:
		done(kerr.GroupIDNotFound.Code)
		return
	case g.state != Empty || len(g.members) > 0 || (g.cons != nil && len(g.cons.Members) > 0):
		done(kerr.NonEmptyGroup.Code)
		return
	}
	g.setState(Dead, c.wallMillis())
	delete(c.groups, name)
	var recs []Record
	for _, tp := range g.sortedOffsets() {
		recs = append(recs, Record{Key: offsetKey(name, tp)})
	}
	recs = append(recs, Record{Key: groupKey(name)})
	if g.cons != nil {
		recs = append(recs, Record{Key: consumerKey(name)})
	}
	c.env.Log.Write(recs, func(_ time.Duration, err error) {
		done(storeErrorCode(err, kerr.UnknownServerError))
	})
}

// Offset is one committed offset, for lag reporting.
type Offset struct {
	Group     string
	Topic     string
	Partition int32
	Offset    int64
}

// Committed returns every committed offset of the coordinator's groups,
// sorted by group, topic and partition.
func (c *Coordinator) Committed() []Offset {
	var out []Offset
	for _, name := range c.groupNames() {
		g := c.groups[name]
		for _, tp := range g.sortedOffsets() {
			out = append(out, Offset{Group: name, Topic: tp.topic, Partition: tp.partition, Offset: g.offsets[tp].offset})
		}
	}
	return out
}

// GroupState returns a group's state and its member count (Dead, 0 for an
// unknown group).
func (c *Coordinator) GroupState(name string) (State, int) {
	g := c.groups[name]
	if g == nil {
		return Dead, 0
	}
	if g.cons != nil {
		if len(g.cons.Members) == 0 {
			return Empty, 0
		}
		return Stable, len(g.cons.Members)
	}
	return g.state, len(g.members)
}
