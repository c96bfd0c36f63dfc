package group

// ConsumerGroupHeartbeat (key 68), versions 0-1 (KIP-848): a member joins
// (epoch 0), heartbeats (its epoch), leaves (-1) or, static, leaves for
// now keeping its assignment (-2). Each heartbeat may change the member's
// subscription (names and/or a regex, resolved here against the topics
// that exist now), its server assignor and rack; the group epoch rises
// when any of that, the membership or the subscribed topics' partitions
// change, the target assignment is recomputed, and the member is
// reconciled one step (consumer.go). A heartbeat that changed the group is
// answered once its record is durable (consumer_records.go); one that did
// not is answered at once.
//
// Errors, as Kafka's: INVALID_REQUEST for a malformed request,
// INVALID_REGULAR_EXPRESSION, UNSUPPORTED_ASSIGNOR, GROUP_ID_NOT_FOUND
// when the id is a classic group with members, UNKNOWN_MEMBER_ID,
// FENCED_MEMBER_EPOCH (an epoch the member is not at, unless it is the
// previous one and the member owns no more than it was given),
// UNRELEASED_INSTANCE_ID (a static id another live member holds),
// FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED. A refused heartbeat leaves
// the group as it was.

import (
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/floe-broker/floe/internal/plant"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// hbArgs is a validated heartbeat.
type hbArgs struct {
	req    *kmsg.ConsumerGroupHeartbeatRequest
	cl     Client
	regex  *regexp.Regexp
	owned  assignment // reported owned partitions; nil when not sent
	topics []TopicInfo
	byName map[string]TopicInfo
}

// ConsumerGroupHeartbeat serves one heartbeat; respond is called exactly
// once, now or when the group's record is written.
func (c *Coordinator) ConsumerGroupHeartbeat(now time.Duration, cl Client, req *kmsg.ConsumerGroupHeartbeatRequest, respond func(*kmsg.ConsumerGroupHeartbeatResponse)) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	fail := func(e *kerr.Error, msg string) {
		resp.ErrorCode = e.Code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		respond(resp)
	}
	if req.Version == 0 && req.MemberID == "" && req.MemberEpoch == epochJoin {
		req.MemberID = c.newMemberID(cl.ID)
	}
	a, e, msg := c.validateHeartbeat(cl, req)
	if e != nil {
		fail(e, msg)
		return
	}
	g := c.groups[req.Group]
	switch {
	case g == nil && req.MemberEpoch != epochJoin:
		fail(kerr.UnknownMemberID, "the group has no such member")
		return
	case g != nil && g.cons == nil && (len(g.members) > 0 || g.state != Empty):
		if req.MemberEpoch != epochJoin {
			fail(kerr.GroupIDNotFound, "Group "+req.Group+" is not a consumer group.")
			return
		}
		if e, msg := c.checkUpgrade(g); e != nil {
			fail(e, msg)
			return
		}
	}
	created := false
	if g == nil {
		g = newGroup(req.Group)
		g.setState(Empty, c.wallMillis())
		c.groups[req.Group] = g
		created = true
	}
	converted, upgraded := false, false
	prevType := g.protocolType
	if g.cons == nil {
		cg, e, msg := c.fromClassic(g)
		if e != nil {
			fail(e, msg)
			return
		}
		upgraded = len(cg.Members) > 0
		g.cons, g.protocolType, converted = cg, "consumer", true
	}
	if g.cons.writing == 0 {
		// nothing in flight: the image to fall back to is the current one
		// (for a new group, the empty one)
		g.cons.committed = encodeConsumerGroup(g.cons)
	}
	before := encodeConsumerGroup(g.cons)
	m, e, msg := c.heartbeatMember(g, a, now)
	if e != nil {
		if converted {
			g.cons, g.protocolType = nil, prevType
		}
		if created {
			delete(c.groups, req.Group)
		}
		fail(e, msg)
		return
	}
	if upgraded {
		c.finishUpgrade(g)
		for _, id := range g.cons.memberIDs() {
			if cm := g.cons.Members[id]; cm.Classic != nil {
				c.touchConsumer(g, cm, now) // their sessions go on in the consumer group
			}
		}
	}
	resp.MemberID = kmsg.StringPtr(req.MemberID)
	resp.HeartbeatIntervalMillis = int32(c.consumerTimeouts(req.Group).HeartbeatInterval.Milliseconds())
	if m == nil { // left
		resp.MemberEpoch = req.MemberEpoch
	} else {
		resp.MemberEpoch = m.Epoch
		if req.MemberEpoch == epochJoin || a.owned == nil || !a.owned.equal(m.Assigned) {
			resp.Assignment = c.responseAssignment(m.Assigned, a.byName)
		}
	}
	if m == nil && req.MemberEpoch == epochLeave && c.canDowngrade(g) {
		recs := c.downgrade(g, now, true)
		c.env.Log.Write(recs, func(_ time.Duration, err error) {
			if code := storeErrorCode(err, kerr.UnknownServerError); code != 0 {
				resp = req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
				resp.ErrorCode = code
			}
			respond(resp)
		})
		return
	}
	after := encodeConsumerGroup(g.cons)
	if string(after) == string(before) && !converted && g.cons.writing == 0 {
		// nothing changed and nothing is in flight: what the answer says
		// is durable already. With a write in flight the answer waits
		// behind it (a write of the same image), so it never reports
		// state a failed write takes back.
		respond(resp)
		return
	}
	var recs []Record
	if converted && g.persisted {
		recs = append(recs, Record{Key: groupKey(g.name)}) // the classic metadata goes
		g.persisted = false
	}
	recs = append(recs, Record{Key: consumerKey(g.name), Value: after})
	c.writeConsumer(g, recs, func(code int16) {
		if code != 0 {
			resp = req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
			resp.ErrorCode = code
		}
		respond(resp)
	})
}

// writeConsumer writes a consumer group's records (the last is the
// group's whole image). After a failure the group goes back to its last
// committed image, but only once none of its writes is in flight: each
// write holds every change made before it, so a later write may still
// commit the failed one's change (an append refused at once while an
// earlier write is in flight, or an earlier one refused while a later one
// commits), and going back at the first failure would leave the group's
// memory behind its log. Meanwhile the group goes on from its current
// state; what a failed write's request was told (an error) stays true
// either way, as the client retries.
func (c *Coordinator) writeConsumer(g *group, recs []Record, done func(code int16)) {
	cg := g.cons
	cg.writing++
	value := recs[len(recs)-1].Value
	c.env.Log.Write(recs, func(now time.Duration, err error) {
		cg.writing--
		code := storeErrorCode(err, kerr.UnknownServerError)
		if code == 0 {
			cg.committed = value
		} else {
			cg.failed = true
		}
		if cg.writing == 0 && cg.failed {
			cg.failed = false
			c.backToCommitted(g, cg, now)
		}
		done(code)
	})
}

// backToCommitted puts the group back to its last committed image, unless
// it is there already (or was replaced meanwhile).
func (c *Coordinator) backToCommitted(g *group, cg *consumerGroup, now time.Duration) {
	if g.cons != cg || cg.committed == nil || string(encodeConsumerGroup(cg)) == string(cg.committed) {
		return
	}
	if back, err := decodeConsumerGroup(cg.committed); err == nil {
		c.restoreConsumer(g, back, now)
	}
}

// restoreConsumer puts a decoded image in place of a group's state, with
// fresh session timers for its members.
func (c *Coordinator) restoreConsumer(g *group, cg *consumerGroup, now time.Duration) {
	for _, m := range g.cons.Members { //floe:unordered marks timers stale
		m.gone = true
	}
	cg.committed, cg.writing = g.cons.committed, g.cons.writing
	g.cons = cg
	if c.started {
		for _, id := range cg.memberIDs() {
			c.touchConsumer(g, cg.Members[id], now)
		}
	}
}

func (c *Coordinator) validateHeartbeat(cl Client, req *kmsg.ConsumerGroupHeartbeatRequest) (hbArgs, *kerr.Error, string) {
	a := hbArgs{req: req, cl: cl}
	switch {
	case req.Group == "":
		return a, kerr.InvalidRequest, "GroupId can't be empty"
	case req.MemberID == "" || len(req.MemberID) > 255:
		return a, kerr.InvalidRequest, "MemberId can't be empty"
	case req.InstanceID != nil && *req.InstanceID == "":
		return a, kerr.InvalidRequest, "InstanceId can't be empty"
	case req.RackID != nil && *req.RackID == "":
		return a, kerr.InvalidRequest, "RackId can't be empty"
	case req.MemberEpoch < epochLeaveStatic:
		return a, kerr.InvalidRequest, "MemberEpoch is invalid"
	case req.MemberEpoch == epochLeaveStatic && req.InstanceID == nil:
		return a, kerr.InvalidRequest, "InstanceId can't be null for a static leave"
	}
	if req.MemberEpoch == epochJoin {
		switch {
		case req.RebalanceTimeoutMillis <= 0:
			return a, kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request"
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return a, kerr.InvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request"
		case len(req.Topics) > 0:
			return a, kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining"
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		re, err := regexp.Compile("^(?:" + *req.SubscribedTopicRegex + ")$")
		if err != nil {
			return a, kerr.InvalidRegularExpression, "SubscribedTopicRegex does not compile: " + err.Error()
		}
		a.regex = re
	}
	if req.ServerAssignor != nil && !containsString(c.cfg.ConsumerAssignors, *req.ServerAssignor) {
		return a, kerr.UnsupportedAssignor, "ServerAssignor " + *req.ServerAssignor + " is not supported; supported: " + strings.Join(c.cfg.ConsumerAssignors, ", ")
	}
	if c.env.Topics != nil {
		a.topics = c.env.Topics()
	}
	a.byName = make(map[string]TopicInfo, len(a.topics))
	byID := make(map[[16]byte]string, len(a.topics))
	for _, t := range a.topics {
		a.byName[t.Name] = t
		byID[t.ID] = t.Name
	}
	if req.Topics != nil {
		a.owned = assignment{}
		for _, t := range req.Topics {
			name, ok := byID[t.TopicID]
			if !ok {
				continue // a deleted topic: owned by nobody now
			}
			for _, p := range t.Partitions {
				a.owned.add(topicPartition{name, p})
			}
		}
	}
	return a, nil, ""
}

// heartbeatMember applies the heartbeat to the group; it returns the
// member (nil after a leave). On error the group is unchanged.
func (c *Coordinator) heartbeatMember(g *group, a hbArgs, now time.Duration) (*cmember, *kerr.Error, string) {
	cg, req := g.cons, a.req
	m := cg.Members[req.MemberID]
	if m != nil && m.Classic != nil {
		return nil, kerr.UnknownMemberID, "the member uses the classic protocol"
	}
	switch req.MemberEpoch {
	case epochLeave, epochLeaveStatic:
		return nil, c.leaveConsumer(g, m, req, now), ""
	case epochJoin:
		var e *kerr.Error
		if m, e = c.joinConsumer(g, m, a, now); e != nil {
			return nil, e, ""
		}
	default:
		if e, msg := checkMemberEpoch(m, a); e != nil {
			return nil, e, msg
		}
	}
	bump := c.updateConsumerMember(m, a)
	c.touchConsumer(g, m, now)
	if c.refreshMetadata(cg, a) {
		bump = true
	}
	if bump {
		cg.Epoch++
	}
	c.maybeAssign(cg, a)
	cg.reconcile(m, a.owned, now)
	if plant.Enabled(plant.ConsumerAssignBeforeRevoke) {
		plantGrabTarget(cg, m)
	}
	c.armConsumerTimer(g, m, now)
	return m, nil, ""
}

// plantGrabTarget is the planted bug: the member takes its whole target
// at once, whether or not another member still owns part of it.
func plantGrabTarget(cg *consumerGroup, m *cmember) {
	m.Assigned = m.Target.clone()
	m.Epoch, m.State = cg.AssignmentEpoch, memberStable
}

func checkMemberEpoch(m *cmember, a hbArgs) (*kerr.Error, string) {
	req := a.req
	switch {
	case m == nil:
		return kerr.UnknownMemberID, "the group has no such member"
	case req.InstanceID != nil && (m.InstanceID == nil || *m.InstanceID != *req.InstanceID):
		return kerr.FencedInstanceID, "the member id does not hold this instance id"
	case req.MemberEpoch > m.Epoch:
		return kerr.FencedMemberEpoch, "the member epoch is ahead of the group's"
	case req.MemberEpoch < m.Epoch:
		// a lost response: allowed at the previous epoch when the member
		// owns no more than it was given
		if req.MemberEpoch != m.PrevEpoch || a.owned == nil || !a.owned.subsetOf(m.Assigned) {
			return kerr.FencedMemberEpoch, "the member epoch is stale"
		}
	}
	return nil, ""
}

// joinConsumer admits a member at epoch 0: new, rejoining after being
// fenced (its old state is dropped), or a static member replacing its
// previous incarnation (which takes over its assignment and epoch).
func (c *Coordinator) joinConsumer(g *group, m *cmember, a hbArgs, now time.Duration) (*cmember, *kerr.Error) {
	cg, req := g.cons, a.req
	var prev *cmember
	if req.InstanceID != nil {
		prev = cg.byInstance(*req.InstanceID)
		// a consumer-protocol member replaces a live one only after its
		// static leave (epoch -2); a classic one it replaces at once, as
		// Kafka does (the classic protocol has no static leave)
		if prev != nil && prev.ID != req.MemberID && prev.Epoch != epochLeaveStatic && prev.Classic == nil {
			return nil, kerr.UnreleasedInstanceID
		}
	}
	if m == nil && prev == nil && c.cfg.ConsumerMaxSize > 0 && len(cg.Members) >= c.cfg.ConsumerMaxSize {
		return nil, kerr.GroupMaxSizeReached
	}
	if prev != nil && prev.ID != req.MemberID {
		// the static member's new incarnation: same assignment and epoch,
		// no rebalance
		nm := cg.replaceStatic(prev, req.MemberID)
		nm.Classic = nil // it speaks the consumer protocol now
		return nm, nil
	}
	if m != nil {
		// A rejoin under the same id keeps what the member holds: it may
		// be a late duplicate of its first join while the member still
		// owns partitions, so nothing is released until the member
		// reports it (reconciliation revokes what it must).
		cg.Epoch++
		return m, nil
	}
	nm := &cmember{ID: req.MemberID, Epoch: 0, Assigned: assignment{}}
	cg.Members[nm.ID] = nm
	cg.Epoch++
	return nm, nil
}

// leaveConsumer removes a member (-1), or marks a static one as gone for
// now (-2), keeping its assignment until its session ends.
func (c *Coordinator) leaveConsumer(g *group, m *cmember, req *kmsg.ConsumerGroupHeartbeatRequest, now time.Duration) *kerr.Error {
	cg := g.cons
	if m == nil && req.InstanceID != nil {
		m = cg.byInstance(*req.InstanceID)
		if m != nil && m.ID != req.MemberID {
			return kerr.FencedInstanceID
		}
	}
	if m == nil {
		return kerr.UnknownMemberID
	}
	if req.MemberEpoch == epochLeaveStatic {
		if m.Epoch != epochLeaveStatic {
			m.PrevEpoch, m.Epoch = m.Epoch, epochLeaveStatic
		}
		c.touchConsumer(g, m, now)
		return nil
	}
	c.removeConsumerMember(g, m)
	return nil
}

// replaceStatic puts a static member's new incarnation, under member id
// id, in place of prev: it takes over prev's assignment and epoch.
func (cg *consumerGroup) replaceStatic(prev *cmember, id string) *cmember {
	delete(cg.Members, prev.ID)
	prev.gone = true
	nm := *prev
	nm.ID, nm.gone, nm.timerArmed = id, false, false
	nm.rejoinBy, nm.syncBy = 0, 0
	if nm.Epoch == epochLeaveStatic {
		nm.Epoch = nm.PrevEpoch
	}
	cg.Members[id] = &nm
	return &nm
}

func (c *Coordinator) removeConsumerMember(g *group, m *cmember) {
	m.gone = true
	delete(g.cons.Members, m.ID)
	g.cons.Epoch++
}

// updateConsumerMember applies the heartbeat's optional fields; it returns whether
// the group epoch must rise (subscription or assignor changed).
func (c *Coordinator) updateConsumerMember(m *cmember, a hbArgs) bool {
	req := a.req
	m.ClientID, m.ClientHost, m.Principal = a.cl.ID, a.cl.Host, a.cl.Principal
	if req.RackID != nil {
		m.Rack = req.RackID
	}
	if req.InstanceID != nil {
		m.InstanceID = req.InstanceID
	}
	if req.RebalanceTimeoutMillis > 0 {
		m.RebalanceMillis = req.RebalanceTimeoutMillis
	}
	bump := false
	if req.SubscribedTopicNames != nil {
		ts := append([]string{}, req.SubscribedTopicNames...)
		sort.Strings(ts)
		ts = dedup(ts)
		if strings.Join(ts, "\x00") != strings.Join(m.Topics, "\x00") || (len(ts) == 0) != (len(m.Topics) == 0) {
			m.Topics, bump = ts, true
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.Regex {
		m.Regex, bump = *req.SubscribedTopicRegex, true
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.Assignor {
		m.Assignor, bump = *req.ServerAssignor, true
	}
	return bump
}

func dedup(ts []string) []string {
	out := ts[:0]
	for i, t := range ts {
		if i == 0 || t != ts[i-1] {
			out = append(out, t)
		}
	}
	return out
}

// subscribedTopics returns the existing topics a member subscribes to,
// by name or by regex (internal topics only by name), sorted. A regex
// matches only topics the member's principal may DESCRIBE, as in Kafka
// (names were filtered when the heartbeat came in).
func (c *Coordinator) subscribedTopics(m *cmember, a hbArgs) []string {
	var re *regexp.Regexp
	if m.Regex != "" {
		re, _ = regexp.Compile("^(?:" + m.Regex + ")$") // compiled when it was accepted
	}
	var out []string
	for _, t := range a.topics {
		if containsString(m.Topics, t.Name) || (re != nil && !strings.HasPrefix(t.Name, "__") && re.MatchString(t.Name) && c.mayDescribe(m, t.Name)) {
			out = append(out, t.Name)
		}
	}
	return out
}

// mayDescribe reports whether member m may DESCRIBE topic (Env.MayDescribe
// with its recorded principal; a member with none recorded may).
func (c *Coordinator) mayDescribe(m *cmember, topic string) bool {
	if c.env.MayDescribe == nil || m.Principal == "" {
		return true
	}
	return c.env.MayDescribe(m.Principal, strings.TrimPrefix(m.ClientHost, "/"), topic)
}

// refreshMetadata re-resolves every member's subscription against the
// topics that exist now; it returns whether the subscribed topics or their
// partition counts changed (a topic created that a regex matches, a
// partition added, a topic deleted).
func (c *Coordinator) refreshMetadata(cg *consumerGroup, a hbArgs) bool {
	meta := map[string]int32{}
	for _, id := range cg.memberIDs() {
		for _, t := range c.subscribedTopics(cg.Members[id], a) {
			meta[t] = a.byName[t].Partitions
		}
	}
	same := len(meta) == len(cg.Metadata)
	for t, n := range meta { //floe:unordered a comparison
		if cg.Metadata[t] != n {
			same = false
		}
	}
	if same {
		return false
	}
	cg.Metadata = meta
	return true
}

// maybeAssign recomputes the target assignment when the group epoch moved
// past it, with the assignor most members chose (ties and no choice: the
// first configured).
func (c *Coordinator) maybeAssign(cg *consumerGroup, a hbArgs) {
	if cg.AssignmentEpoch >= cg.Epoch {
		return
	}
	in := assignInput{subs: map[string][]string{}, racks: map[string]string{}, topics: a.byName, prev: map[string]assignment{}}
	votes := map[string]int{}
	for _, id := range cg.memberIDs() {
		m := cg.Members[id]
		in.members = append(in.members, id)
		in.subs[id] = c.subscribedTopics(m, a)
		if m.Rack != nil {
			in.racks[id] = *m.Rack
		}
		in.prev[id] = m.Target
		if m.Assignor != "" {
			votes[m.Assignor]++
		}
	}
	name := c.cfg.ConsumerAssignors[0]
	for _, n := range c.cfg.ConsumerAssignors {
		if votes[n] > votes[name] {
			name = n
		}
	}
	targets := assignWith(name, in)
	for _, id := range in.members {
		cg.Members[id].Target = targets[id]
	}
	cg.AssignmentEpoch = cg.Epoch
}

// responseAssignment is a member's assignment as the response carries it.
func (c *Coordinator) responseAssignment(as assignment, byName map[string]TopicInfo) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	out := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	out.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, t := range sortedTopics(as) {
		ti, ok := byName[t]
		if !ok {
			continue
		}
		rt := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		rt.TopicID, rt.Partitions = ti.ID, append([]int32(nil), as[t]...)
		out.Topics = append(out.Topics, rt)
	}
	return &out
}

// consumerTimeouts returns a consumer group's timeouts: its own group
// configs over the broker's.
func (c *Coordinator) consumerTimeouts(group string) ConsumerTimeouts {
	var t ConsumerTimeouts
	if c.env.ConsumerTimeouts != nil {
		t = c.env.ConsumerTimeouts(group)
	}
	return c.cfg.consumerTimeouts(t)
}

// touchConsumer moves a member's session deadline to now plus the group's
// session timeout.
func (c *Coordinator) touchConsumer(g *group, m *cmember, now time.Duration) {
	m.deadline = now + c.consumerTimeouts(g.name).Session
	if m.Classic != nil && m.Classic.SessionMillis > 0 {
		m.deadline = now + millis(m.Classic.SessionMillis) // its own, from its JoinGroup
	}
	c.armConsumerTimer(g, m, now)
}

// armConsumerTimer makes sure a timer fires by the member's next deadline
// (session end, or revocation deadline while unrevoked).
func (c *Coordinator) armConsumerTimer(g *group, m *cmember, now time.Duration) {
	if !c.started {
		return
	}
	at := m.deadline
	if m.State == memberUnrevoked && m.revokeDeadline > 0 && m.revokeDeadline < at {
		at = m.revokeDeadline
	}
	for _, d := range []time.Duration{m.rejoinBy, m.syncBy} {
		if d > 0 && d < at {
			at = d
		}
	}
	if m.timerArmed && m.timerAt <= at {
		return
	}
	tok := c.nextToken()
	m.timerArmed, m.timerToken, m.timerAt = true, tok, at
	d := max(at-now, 0)
	c.env.Timers.After(d, func(now time.Duration) { c.consumerTimer(g, m, tok, now) })
}

// consumerTimer fences a member whose session ended, or that did not
// revoke within its rebalance timeout: it leaves the group, its
// partitions freed for the others.
func (c *Coordinator) consumerTimer(g *group, m *cmember, tok uint64, now time.Duration) {
	if c.closed || m.gone || tok != m.timerToken || g.cons == nil || g.cons.Members[m.ID] != m {
		return
	}
	m.timerArmed = false
	late := now >= m.deadline || (m.State == memberUnrevoked && m.revokeDeadline > 0 && now >= m.revokeDeadline) ||
		(m.rejoinBy > 0 && now >= m.rejoinBy) || (m.syncBy > 0 && now >= m.syncBy)
	if !late {
		c.armConsumerTimer(g, m, now)
		return
	}
	if g.cons.writing == 0 {
		g.cons.committed = encodeConsumerGroup(g.cons)
	}
	c.removeConsumerMember(g, m)
	if m.Classic == nil && c.canDowngrade(g) {
		c.env.Log.Write(c.downgrade(g, now, true), func(time.Duration, error) {})
		return
	}
	c.writeConsumer(g, []Record{{Key: consumerKey(g.name), Value: encodeConsumerGroup(g.cons)}}, func(int16) {})
}
