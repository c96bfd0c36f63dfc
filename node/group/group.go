package group

import (
	"bytes"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a classic group's state, named as Kafka names it on the wire
// (DescribeGroups, ListGroups).
type State int8

const (
	// Empty: no members; offsets (and a generation) may remain.
	Empty State = iota
	// PreparingRebalance: waiting for members to (re)join.
	PreparingRebalance
	// CompletingRebalance: joined; waiting for the leader's assignment.
	CompletingRebalance
	// Stable: every member has its assignment.
	Stable
	// Dead: deleted; the group is gone from the coordinator.
	Dead
)

var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// protocol is one assignment protocol a member supports.
type protocol struct {
	name     string
	metadata []byte
}

// joinResult is what a parked JoinGroup is answered with.
type joinResult struct {
	code           int16
	memberID       string
	generation     int32
	protocolType   string
	protocol       *string
	leader         string
	skipAssignment bool
	members        []kmsg.JoinGroupResponseMember
}

// member is one member of a group.
//
// Invariants: joinWaiter != nil exactly when the member is counted in its
// group's awaitingJoin; a member with a static instance id is the one the
// group's static map points to; timerArmed is set while one session timer
// is outstanding for the member (at most one is).
type member struct {
	id           string
	instanceID   *string
	clientID     string
	clientHost   string
	rebalance    time.Duration
	session      time.Duration
	protocolType string
	protocols    []protocol // in the member's order of preference
	assignment   []byte
	// synced is the last assignment the member was handed (its SyncGroup
	// answer, or the one replayed), kept when a failed rebalance clears
	// assignment: what it may still own (an upgrade to a consumer group
	// starts from it, migrate.go).
	synced []byte

	joinWaiter func(joinResult)
	syncWaiter func(code int16, assignment []byte)
	// joinVersion is the version of the JoinGroup being waited on (v9+
	// may be told to skip the assignment).
	joinVersion int16

	isNew bool // joined in the current rebalance; expires on its own timeout
	// deadline is when the session ends without a sign of life; the armed
	// session timer (timerToken) fires at timerAt, and only it counts.
	deadline   time.Duration
	timerArmed bool
	timerToken uint64
	timerAt    time.Duration
	gone       bool // removed from its group: its timers are stale
}

// isStatic reports whether the member has a group.instance.id.
func (m *member) isStatic() bool { return m.instanceID != nil }

// metadataFor returns the member's metadata for a protocol.
func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

// sameProtocols reports whether ps equals the member's protocols, in order.
func (m *member) sameProtocols(ps []protocol) bool {
	if len(ps) != len(m.protocols) {
		return false
	}
	for i := range ps {
		if ps[i].name != m.protocols[i].name || !bytes.Equal(ps[i].metadata, m.protocols[i].metadata) {
			return false
		}
	}
	return true
}

// topicPartition names a partition a group committed an offset for.
type topicPartition struct {
	topic     string
	partition int32
}

// committed is one committed offset.
type committed struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	timestamp   int64 // commit time, Unix ms
}

// group is one consumer group.
//
// Invariants: members is in join order and byID indexes it; leader is ""
// or a member's id (never "" while there are members); awaitingJoin
// counts the members with a joinWaiter; protocol is set in
// CompletingRebalance and Stable and nil in Empty; Empty means no members,
// CompletingRebalance and Stable at least one; pendingSync holds only members; a static map entry points at a
// member with that instance id; pendingCommits counts offset writes in
// flight per partition (never zero-valued entries).
type group struct {
	name         string
	state        State
	stateMillis  int64 // when state was entered, Unix ms
	protocolType string
	protocol     *string
	generation   int32
	leader       string

	members      []*member
	byID         map[string]*member
	static       map[string]string // instance id → member id
	pending      map[string]uint64 // KIP-394 member ids handed out, not yet joined → timer token
	pendingSync  map[string]bool   // joined this generation, not yet synced
	awaitingJoin int

	// delaying is set while the initial delayed rebalance runs; members
	// joining then (newMemberAdded) extend it.
	delaying       bool
	newMemberAdded bool
	// rebalanceSeq invalidates rebalance and sync timers of earlier phases.
	rebalanceSeq uint64
	// subscribed are the topics the members' consumer-protocol metadata
	// names (nil when not known), for OffsetDelete.
	subscribed map[string]bool

	// persisted is set while a group metadata record for the group is in
	// the log (replay drops a group with neither it nor offsets).
	persisted      bool
	offsets        map[topicPartition]committed
	pendingCommits map[topicPartition]int

	// cons is set while the group is a KIP-848 consumer group
	// (consumer.go): its classic membership is then empty.
	cons *consumerGroup
}

func newGroup(name string) *group {
	return &group{
		name: name, byID: map[string]*member{}, static: map[string]string{},
		pending: map[string]uint64{}, pendingSync: map[string]bool{},
		offsets: map[topicPartition]committed{}, pendingCommits: map[topicPartition]int{},
	}
}

func (g *group) setState(s State, wallMillis int64) {
	g.state = s
	g.stateMillis = wallMillis
}

// canRebalance reports whether a rebalance may start from the current
// state.
func (g *group) canRebalance() bool {
	return g.state == Stable || g.state == CompletingRebalance || g.state == Empty
}

// add appends a member; the first member of a leaderless group leads.
func (g *group) add(m *member) {
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	g.members = append(g.members, m)
	g.byID[m.id] = m
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
	if m.joinWaiter != nil {
		g.awaitingJoin++
	}
}

// remove takes a member out of the group. A departing leader is succeeded
// by the earliest remaining member.
func (g *group) remove(id string) *member {
	m, ok := g.byID[id]
	if !ok {
		return nil
	}
	m.gone = true
	delete(g.byID, id)
	for i, x := range g.members {
		if x == m {
			g.members = append(g.members[:i], g.members[i+1:]...)
			break
		}
	}
	if m.instanceID != nil && g.static[*m.instanceID] == id {
		delete(g.static, *m.instanceID)
	}
	delete(g.pendingSync, id)
	if m.joinWaiter != nil {
		g.awaitingJoin--
	}
	if g.leader == id {
		g.leader = ""
		if len(g.members) > 0 {
			g.leader = g.members[0].id
		}
	}
	return m
}

// setJoinWaiter parks (fn non-nil) or clears a member's JoinGroup.
func (g *group) setJoinWaiter(m *member, fn func(joinResult), version int16) {
	switch {
	case fn != nil && m.joinWaiter == nil:
		g.awaitingJoin++
	case fn == nil && m.joinWaiter != nil:
		g.awaitingJoin--
	}
	m.joinWaiter = fn
	m.joinVersion = version
}

// answerJoin answers a member's parked JoinGroup, if any.
func (g *group) answerJoin(m *member, res joinResult) {
	fn := m.joinWaiter
	if fn == nil {
		return
	}
	g.setJoinWaiter(m, nil, 0)
	fn(res)
}

// answerSync answers a member's parked SyncGroup, if any.
func answerSync(m *member, code int16, assignment []byte) {
	fn := m.syncWaiter
	if fn == nil {
		return
	}
	m.syncWaiter = nil
	fn(code, assignment)
}

// allJoined reports whether every member (and every member id handed out)
// has joined this rebalance.
func (g *group) allJoined() bool {
	return g.awaitingJoin == len(g.members) && len(g.pending) == 0
}

// rebalanceTimeout is the longest rebalance timeout among the members.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalance)
	}
	return d
}

// isFenced reports whether a request carrying instanceID and memberID
// comes from a static member another member id has replaced.
func (g *group) isFenced(instanceID *string, memberID string) bool {
	if instanceID == nil {
		return false
	}
	cur, ok := g.static[*instanceID]
	return ok && cur != memberID
}

// candidateProtocols are the protocols every member supports, in the first
// member's order of preference.
func (g *group) candidateProtocols() []string {
	if len(g.members) == 0 {
		return nil
	}
	var out []string
	for _, p := range g.members[0].protocols {
		all := true
		for _, m := range g.members[1:] {
			if !hasProtocol(m.protocols, p.name) {
				all = false
				break
			}
		}
		if all {
			out = append(out, p.name)
		}
	}
	return out
}

func hasProtocol(ps []protocol, name string) bool {
	for _, p := range ps {
		if p.name == name {
			return true
		}
	}
	return false
}

// supports reports whether a member with this protocol type and these
// protocols may join: an empty group takes any non-empty offer; otherwise
// the type must match and one protocol must be one every member supports.
func (g *group) supports(protocolType string, ps []protocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(ps) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, c := range g.candidateProtocols() {
		if hasProtocol(ps, c) {
			return true
		}
	}
	return false
}

// selectProtocol chooses the generation's protocol as Kafka does: among
// the protocols every member supports, each member votes for the first in
// its own preference order; the most votes win. Ties go to the protocol the
// first member prefers, so the choice is deterministic.
func (g *group) selectProtocol() string {
	cands := g.candidateProtocols()
	if len(cands) == 0 {
		return ""
	}
	votes := make(map[string]int, len(cands))
	for _, m := range g.members {
		for _, p := range m.protocols {
			if containsString(cands, p.name) {
				votes[p.name]++
				break
			}
		}
	}
	best := cands[0]
	for _, c := range cands[1:] {
		if votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// computeSubscribed derives the topics a consumer group's members
// subscribe to from their metadata for the selected protocol; nil when the
// group does not use the consumer protocol or some metadata is unreadable.
func (g *group) computeSubscribed() map[string]bool {
	if g.protocolType != "consumer" || g.protocol == nil {
		return nil
	}
	topics := map[string]bool{}
	for _, m := range g.members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadataFor(*g.protocol)); err != nil {
			return nil
		}
		for _, t := range md.Topics {
			topics[t] = true
		}
	}
	return topics
}

// memberList is what the leader's JoinGroup response lists: every member
// with its metadata for the selected protocol.
func (g *group) memberList() []kmsg.JoinGroupResponseMember {
	out := make([]kmsg.JoinGroupResponseMember, 0, len(g.members))
	for _, m := range g.members {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.id
		jm.InstanceID = m.instanceID
		if g.protocol != nil {
			jm.ProtocolMetadata = m.metadataFor(*g.protocol)
		}
		out = append(out, jm)
	}
	return out
}

// sortedOffsets returns the partitions with committed offsets, sorted.
func (g *group) sortedOffsets() []topicPartition {
	tps := make([]topicPartition, 0, len(g.offsets))
	for tp := range g.offsets { //floe:unordered sorted below
		tps = append(tps, tp)
	}
	sortTPs(tps)
	return tps
}

func sortTPs(tps []topicPartition) {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].topic != tps[j].topic {
			return tps[i].topic < tps[j].topic
		}
		return tps[i].partition < tps[j].partition
	})
}

// rekey gives a member a new id (a static member's restarted incarnation),
// keeping its place, leadership and pending sync.
func (g *group) rekey(m *member, id string) {
	old := m.id
	delete(g.byID, old)
	m.id = id
	g.byID[id] = m
	if m.instanceID != nil {
		g.static[*m.instanceID] = id
	}
	if g.leader == old {
		g.leader = id
	}
	if g.pendingSync[old] {
		delete(g.pendingSync, old)
		g.pendingSync[id] = true
	}
}
