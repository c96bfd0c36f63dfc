package group

// KIP-848 consumer groups: the state of a group of type "consumer" and
// its members, and the reconciliation of what each member owns with its
// target assignment. ConsumerGroupHeartbeat (consumer_heartbeat.go) drives
// it; the server-side assignors are in assign.go; the durable image is in
// consumer_records.go.
//
// Epochs, as in Kafka's GroupMetadataManager:
//
//   - the group epoch rises whenever the group's membership, a member's
//     subscription or assignor, or the subscribed topics' partitions
//     change;
//   - the assignment epoch is the group epoch the target assignment was
//     computed at (the target is recomputed lazily, at the next heartbeat
//     of any member, when the group epoch passed it);
//   - a member's epoch is the assignment epoch it has fully reconciled to.
//
// Reconciliation (Kafka's CurrentAssignmentBuilder): a member first gives
// up the partitions it owns that its target does not hold (UNREVOKED: it
// keeps its epoch, and its response no longer lists them; they stay
// "revoking" until a heartbeat reports it no longer owns them), then moves
// to the assignment epoch and receives the partitions of its target that
// no other member owns or is revoking (UNRELEASED while some are still
// held elsewhere; they are added at later heartbeats as they free up).
// So a partition is never owned by two members at once: Owners checks it.

import (
	"sort"
	"time"
)

// memberState is where a member is in its reconciliation.
type memberState int8

const (
	memberStable     memberState = iota // owns exactly its target, at the assignment epoch
	memberUnrevoked                     // must give up Revoking before it advances
	memberUnreleased                    // at the assignment epoch, waiting for partitions others hold
)

var memberStateNames = [...]string{"stable", "unrevoked_partitions", "unreleased_partitions"}

func (s memberState) String() string {
	if s >= 0 && int(s) < len(memberStateNames) {
		return memberStateNames[s]
	}
	return "unknown"
}

// Epochs a heartbeat carries besides a member's own.
const (
	epochJoin        int32 = 0
	epochLeave       int32 = -1
	epochLeaveStatic int32 = -2 // a static member leaves for now and keeps its assignment
)

// assignment maps a topic to its partitions, sorted, without empty topics.
type assignment map[string][]int32

// cmember is one member of a consumer group. Exported fields are the
// durable image (consumer_records.go); the rest is volatile.
type cmember struct {
	ID         string  `json:"id"`
	InstanceID *string `json:"instance,omitempty"`
	Rack       *string `json:"rack,omitempty"`
	ClientID   string  `json:"client,omitempty"`
	ClientHost string  `json:"host,omitempty"`
	// Principal is the member's principal at its last heartbeat, while
	// the broker authorizes: its regex matches only the topics this
	// principal may DESCRIBE. Empty (the authorizer off, or a record
	// written before it was kept) filters nothing until the member's next
	// heartbeat records it.
	Principal       string      `json:"principal,omitempty"`
	Epoch           int32       `json:"epoch"`
	PrevEpoch       int32       `json:"prev_epoch"`
	State           memberState `json:"state"`
	Topics          []string    `json:"topics,omitempty"` // subscribed names, sorted
	Regex           string      `json:"regex,omitempty"`
	Assignor        string      `json:"assignor,omitempty"`
	RebalanceMillis int32       `json:"rebalance_ms"`
	Assigned        assignment  `json:"assigned,omitempty"` // what the member owns (as told)
	Revoking        assignment  `json:"revoking,omitempty"` // given up, not yet confirmed
	Target          assignment  `json:"target,omitempty"`   // its part of the target assignment
	// Classic is set for a member that uses the classic protocol
	// (JoinGroup, SyncGroup, Heartbeat) inside a consumer group
	// (migrate.go).
	Classic *classicMember `json:"classic,omitempty"`

	// rejoinBy: a classic member told to rejoin is fenced if it has not by
	// then; syncBy: one answered a JoinGroup must send its SyncGroup by
	// then (0: none pending).
	rejoinBy       time.Duration
	syncBy         time.Duration
	deadline       time.Duration // session end without a heartbeat
	revokeDeadline time.Duration // while unrevoked: when it is fenced for not revoking
	timerArmed     bool
	timerToken     uint64
	timerAt        time.Duration
	gone           bool
}

// consumerGroup is the KIP-848 state of a group of type consumer.
//
// Invariants (Check): no partition is in two members' Assigned ∪
// Revoking; a member's Epoch is at most AssignmentEpoch, which is at most
// Epoch; Revoking is non-empty exactly in memberUnrevoked.
type consumerGroup struct {
	Epoch           int32               `json:"epoch"`
	AssignmentEpoch int32               `json:"assignment_epoch"`
	Members         map[string]*cmember `json:"members"`
	// Metadata is the partition count of every subscribed topic that
	// exists, at the last heartbeat: a change bumps the epoch.
	Metadata map[string]int32 `json:"metadata,omitempty"`

	// committed is the last durable image (for a group no write of which
	// has committed yet, the empty image): a failed write puts the group
	// back to it once no write is in flight (writeConsumer).
	committed []byte
	// writing counts this group's writes in flight.
	writing int
	// failed marks a write that failed while others were in flight.
	failed bool
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{Members: map[string]*cmember{}}
}

// memberIDs returns the member ids, sorted.
func (cg *consumerGroup) memberIDs() []string {
	ids := make([]string, 0, len(cg.Members))
	for id := range cg.Members { //floe:unordered sorted below
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// byInstance returns the member with a static instance id, or nil.
func (cg *consumerGroup) byInstance(instanceID string) *cmember {
	for _, id := range cg.memberIDs() {
		if m := cg.Members[id]; m.InstanceID != nil && *m.InstanceID == instanceID {
			return m
		}
	}
	return nil
}

// stateName is the group state ConsumerGroupDescribe and ListGroups show.
func (cg *consumerGroup) stateName() string {
	if len(cg.Members) == 0 {
		return "Empty"
	}
	if cg.AssignmentEpoch < cg.Epoch {
		return "Assigning"
	}
	for _, id := range cg.memberIDs() {
		if m := cg.Members[id]; m.Epoch != cg.AssignmentEpoch || m.State != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// ownedByOthers returns every partition held (assigned or revoking) by a
// member other than skip.
func (cg *consumerGroup) ownedByOthers(skip string) map[topicPartition]bool {
	held := map[topicPartition]bool{}
	for id, m := range cg.Members { //floe:unordered builds a set
		if id == skip {
			continue
		}
		m.Assigned.each(func(tp topicPartition) { held[tp] = true })
		m.Revoking.each(func(tp topicPartition) { held[tp] = true })
	}
	return held
}

// reconcile moves m one step towards its target, as far as it may now.
// owned is what the member reported owning (nil: not reported). It
// returns whether anything durable changed.
func (cg *consumerGroup) reconcile(m *cmember, owned assignment, now time.Duration) bool {
	changed := false
	if m.State == memberUnrevoked {
		if owned == nil || owned.intersects(m.Revoking) {
			return false
		}
		m.Revoking, m.State = nil, memberStable
		changed = true
	}
	if m.Epoch == cg.AssignmentEpoch && m.State == memberStable {
		return changed
	}
	keep, revoke := m.Assigned.split(m.Target)
	if len(revoke) > 0 {
		m.Assigned, m.Revoking, m.State = keep, revoke, memberUnrevoked
		m.revokeDeadline = now + millis(m.RebalanceMillis)
		return true
	}
	held := cg.ownedByOthers(m.ID)
	_, add := m.Target.split(m.Assigned)
	next := m.Assigned.clone()
	waiting := false
	add.each(func(tp topicPartition) {
		if held[tp] {
			waiting = true
			return
		}
		next.add(tp)
	})
	state := memberStable
	if waiting {
		state = memberUnreleased
	}
	if m.Epoch != cg.AssignmentEpoch {
		m.PrevEpoch, m.Epoch = m.Epoch, cg.AssignmentEpoch
		changed = true
	}
	if !next.equal(m.Assigned) || state != m.State {
		m.Assigned, m.State = next, state
		changed = true
	}
	return changed
}

// Owners checks the group's safety invariant: it returns a partition two
// members hold at once (assigned or revoking), and ok false, or ok true.
func (cg *consumerGroup) Owners() (tp topicPartition, a, b string, ok bool) {
	seen := map[topicPartition]string{}
	for _, id := range cg.memberIDs() {
		m := cg.Members[id]
		var dup *topicPartition
		check := func(p topicPartition) {
			if o, taken := seen[p]; taken && o != id && dup == nil {
				q := p
				dup = &q
				a = o
			}
			seen[p] = id
		}
		m.Assigned.each(check)
		m.Revoking.each(check)
		if dup != nil {
			return *dup, a, id, false
		}
	}
	return topicPartition{}, "", "", true
}

// each calls fn for every partition, in topic and partition order.
func (a assignment) each(fn func(topicPartition)) {
	for _, t := range sortedTopics(a) {
		for _, p := range a[t] {
			fn(topicPartition{t, p})
		}
	}
}

func sortedTopics(a assignment) []string {
	ts := make([]string, 0, len(a))
	for t := range a { //floe:unordered sorted below
		ts = append(ts, t)
	}
	sort.Strings(ts)
	return ts
}

func (a assignment) has(tp topicPartition) bool {
	for _, p := range a[tp.topic] {
		if p == tp.partition {
			return true
		}
	}
	return false
}

// add inserts tp, keeping the topic's partitions sorted.
func (a assignment) add(tp topicPartition) {
	if a.has(tp) {
		return
	}
	ps := append(a[tp.topic], tp.partition)
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	a[tp.topic] = ps
}

func (a assignment) clone() assignment {
	out := assignment{}
	for t, ps := range a { //floe:unordered copies a map
		out[t] = append([]int32(nil), ps...)
	}
	return out
}

// split returns the partitions of a that are in b, and those that are not.
func (a assignment) split(b assignment) (in, out assignment) {
	in, out = assignment{}, assignment{}
	a.each(func(tp topicPartition) {
		if b.has(tp) {
			in.add(tp)
		} else {
			out.add(tp)
		}
	})
	return in, out
}

func (a assignment) intersects(b assignment) bool {
	hit := false
	a.each(func(tp topicPartition) { hit = hit || b.has(tp) })
	return hit
}

func (a assignment) count() int {
	n := 0
	for _, ps := range a { //floe:unordered a sum
		n += len(ps)
	}
	return n
}

func (a assignment) equal(b assignment) bool {
	if a.count() != b.count() {
		return false
	}
	eq := true
	a.each(func(tp topicPartition) { eq = eq && b.has(tp) })
	return eq
}

// subsetOf reports whether every partition of a is in b.
func (a assignment) subsetOf(b assignment) bool {
	ok := true
	a.each(func(tp topicPartition) { ok = ok && b.has(tp) })
	return ok
}
