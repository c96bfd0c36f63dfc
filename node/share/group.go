package share

import (
	"errors"
	"reflect"
	"sort"
	"time"
)

// Errors of Heartbeat, mapped by the node to Kafka's codes of the same
// names.
var (
	ErrUnknownMember = errors.New("share: unknown member id")           // UNKNOWN_MEMBER_ID
	ErrFencedEpoch   = errors.New("share: member epoch is not current") // FENCED_MEMBER_EPOCH
	ErrBadHeartbeat  = errors.New("share: invalid heartbeat")           // INVALID_REQUEST
	ErrGroupFull     = errors.New("share: group is full")               // GROUP_MAX_SIZE_REACHED
)

// GroupConfig bounds a share group.
type GroupConfig struct {
	SessionTimeout time.Duration // group.share.session.timeout.ms
	MaxSize        int           // group.share.max.size
}

// Member is one share group member.
type Member struct {
	ID, ClientID, ClientHost string
	Rack                     *string
	Epoch                    int32
	Topics                   []string // subscribed, sorted
	Assigned                 map[string][]int32
	lastSeen                 time.Duration
}

// Group is one share group's membership. Not safe for concurrent use.
type Group struct {
	Name    string
	Epoch   int32
	members map[string]*Member
}

// NewGroup returns an empty group.
func NewGroup(name string) *Group { return &Group{Name: name, members: map[string]*Member{}} }

// Heartbeat is one ShareGroupHeartbeat's input.
type Heartbeat struct {
	MemberID, ClientID, ClientHost string
	Rack                           *string
	MemberEpoch                    int32    // 0 join, -1 leave, else the member's epoch
	Topics                         []string // nil: unchanged
}

// Partitions returns a topic's partitions, or nil when it does not exist.
type Partitions func(topic string) []int32

// Heartbeat handles one heartbeat at now. It returns the member's epoch
// and, when it changed since the member last heard it, its assignment
// (topic -> partitions; every subscribed topic's every partition, since
// a share-partition takes many consumers). On error nothing changes.
func (g *Group) Heartbeat(now time.Duration, cfg GroupConfig, hb Heartbeat, parts Partitions) (epoch int32, assigned map[string][]int32, err error) {
	if hb.MemberID == "" || len(hb.MemberID) > 36 {
		return 0, nil, ErrBadHeartbeat
	}
	m := g.members[hb.MemberID]
	switch {
	case hb.MemberEpoch == -1:
		if m == nil {
			return 0, nil, ErrUnknownMember
		}
		delete(g.members, hb.MemberID)
		g.Epoch++
		return -1, nil, nil
	case hb.MemberEpoch == 0:
		if hb.Topics == nil {
			return 0, nil, ErrBadHeartbeat
		}
		if m == nil && cfg.MaxSize > 0 && len(g.members) >= cfg.MaxSize {
			return 0, nil, ErrGroupFull
		}
		g.Epoch++
		m = &Member{ID: hb.MemberID}
		g.members[hb.MemberID] = m
	case m == nil:
		return 0, nil, ErrUnknownMember
	case hb.MemberEpoch != m.Epoch:
		return 0, nil, ErrFencedEpoch
	}
	m.ClientID, m.ClientHost, m.Rack, m.lastSeen = hb.ClientID, hb.ClientHost, hb.Rack, now
	if hb.Topics != nil {
		topics := append([]string{}, hb.Topics...)
		sort.Strings(topics)
		if !reflect.DeepEqual(topics, m.Topics) {
			m.Topics = topics
			g.Epoch++
		}
	}
	want := map[string][]int32{}
	for _, t := range m.Topics {
		if ps := parts(t); len(ps) > 0 {
			want[t] = ps
		}
	}
	if hb.MemberEpoch == 0 || !reflect.DeepEqual(want, m.Assigned) {
		m.Assigned, m.Epoch = want, g.Epoch
		return m.Epoch, want, nil
	}
	return m.Epoch, nil, nil
}

// Expire removes members not heard from within the session timeout at
// now and returns their ids, sorted.
func (g *Group) Expire(now time.Duration, cfg GroupConfig) []string {
	var gone []string
	for id, m := range g.members { //floe:unordered sorted below
		if m.lastSeen+cfg.SessionTimeout <= now {
			gone = append(gone, id)
		}
	}
	sort.Strings(gone)
	for _, id := range gone {
		delete(g.members, id)
	}
	if len(gone) > 0 {
		g.Epoch++
	}
	return gone
}

// Has reports whether id is a member.
func (g *Group) Has(id string) bool { return g.members[id] != nil }

// Members returns the members, sorted by id.
func (g *Group) Members() []Member {
	out := make([]Member, 0, len(g.members))
	for _, m := range g.members { //floe:unordered sorted below
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
