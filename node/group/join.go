package group

// JoinGroup (key 11), versions 0-9, as Kafka's coordinator serves it.
//
// A member without a member id is new. From v4 a new dynamic member is
// first handed an id with MEMBER_ID_REQUIRED (KIP-394) and must join again
// with it; the id counts as a member the rebalance waits for until it joins,
// leaves or its session times out. A new member with a group.instance.id
// (v5+, KIP-345) that is already known replaces the old member id: in a
// Stable group whose protocol would not change this costs no rebalance (the
// old id is fenced with FENCED_INSTANCE_ID), otherwise it rebalances.
//
// A known member rejoining a Stable group with the same metadata, as a
// follower, gets the current generation back at once; the leader rejoining,
// or any member with changed metadata, starts a rebalance. Joins are parked
// until the rebalance completes. v0 has no rebalance timeout (the session
// timeout serves). v9 may tell a rejoining static leader to skip the
// assignment.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinArgs is a JoinGroup request, checked and decoded.
type joinArgs struct {
	version      int16
	memberID     string
	instanceID   *string
	client       Client
	protocolType string
	protocols    []protocol
	session      time.Duration
	rebalance    time.Duration
	answer       func(joinResult)
}

// JoinGroup serves a JoinGroup request. respond is called exactly once:
// now, or when the rebalance completes, or NOT_COORDINATOR at Close.
func (c *Coordinator) JoinGroup(now time.Duration, cl Client, req *kmsg.JoinGroupRequest, respond func(*kmsg.JoinGroupResponse)) {
	a := joinArgs{
		version: req.Version, memberID: req.MemberID, client: cl, protocolType: req.ProtocolType,
		session: millis(req.SessionTimeoutMillis), rebalance: millis(req.RebalanceTimeoutMillis),
		answer: joinResponder(req, respond),
	}
	if req.Version >= 5 {
		a.instanceID = req.InstanceID
	}
	if req.Version == 0 || req.RebalanceTimeoutMillis < 0 {
		a.rebalance = a.session
	}
	for _, p := range req.Protocols {
		a.protocols = append(a.protocols, protocol{name: p.Name, metadata: p.Metadata})
	}
	fail := func(e *kerr.Error) { a.answer(joinResult{code: e.Code, memberID: a.memberID, generation: -1}) }
	switch {
	case req.Group == "":
		fail(kerr.InvalidGroupID)
		return
	case a.session < c.cfg.SessionTimeoutMin || a.session > c.cfg.SessionTimeoutMax:
		fail(kerr.InvalidSessionTimeout)
		return
	case a.instanceID != nil && *a.instanceID == "":
		fail(kerr.InvalidRequest)
		return
	}
	g := c.groups[req.Group]
	if g == nil {
		if a.memberID != "" {
			fail(kerr.UnknownMemberID)
			return
		}
		g = newGroup(req.Group)
		g.setState(Empty, c.wallMillis())
		c.groups[req.Group] = g
	}
	if g.cons != nil {
		if len(g.cons.Members) > 0 {
			c.classicJoinConsumer(g, a, now) // a classic member of a consumer group (migrate.go)
			return
		}
		c.downgradeConsumer(g)
	}
	if a.memberID == "" {
		c.joinNew(g, a, now)
	} else {
		c.joinKnown(g, a, now)
	}
	c.dropIfUnused(g)
}

// dropIfUnused forgets a group that a failed first join created.
func (c *Coordinator) dropIfUnused(g *group) {
	if g.state == Empty && g.generation == 0 && len(g.members) == 0 && len(g.pending) == 0 &&
		len(g.offsets) == 0 && len(g.pendingCommits) == 0 && g.protocolType == "" && g.cons == nil {
		delete(c.groups, g.name)
	}
}

func (c *Coordinator) joinNew(g *group, a joinArgs, now time.Duration) {
	fail := func(e *kerr.Error) { a.answer(joinResult{code: e.Code, generation: -1}) }
	if !g.supports(a.protocolType, a.protocols) {
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	replacing := a.instanceID != nil && g.static[*a.instanceID] != ""
	if c.cfg.MembersMax > 0 && !replacing && len(g.members)+len(g.pending) >= c.cfg.MembersMax {
		fail(kerr.GroupMaxSizeReached)
		return
	}
	prefix := a.client.ID
	if a.instanceID != nil {
		prefix = *a.instanceID
	}
	id := c.newMemberID(prefix)
	for g.byID[id] != nil || g.pending[id] != 0 {
		id = c.newMemberID(prefix) // never in practice: 122 random bits
	}
	switch {
	case replacing:
		c.replaceStatic(g, g.byID[g.static[*a.instanceID]], id, a, now)
	case a.instanceID == nil && a.version >= 4:
		tok := c.nextToken()
		g.pending[id] = tok
		c.env.Timers.After(a.session, func(now time.Duration) { c.pendingExpired(g, id, tok, now) })
		a.answer(joinResult{code: kerr.MemberIDRequired.Code, memberID: id, generation: -1})
	default:
		c.addMember(g, id, a, now)
	}
}

// pendingExpired drops a member id handed out with MEMBER_ID_REQUIRED whose
// member never joined with it.
func (c *Coordinator) pendingExpired(g *group, id string, tok uint64, now time.Duration) {
	if c.closed || g.pending[id] != tok {
		return
	}
	delete(g.pending, id)
	c.checkJoin(g, now)
	if c.groups[g.name] == g {
		c.dropIfUnused(g)
	}
}

func (c *Coordinator) joinKnown(g *group, a joinArgs, now time.Duration) {
	fail := func(e *kerr.Error) { a.answer(joinResult{code: e.Code, memberID: a.memberID, generation: -1}) }
	if !g.supports(a.protocolType, a.protocols) {
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	if _, ok := g.pending[a.memberID]; ok {
		delete(g.pending, a.memberID)
		if a.instanceID != nil {
			// Pending ids are only handed to dynamic members.
			fail(kerr.UnknownMemberID)
			c.checkJoin(g, now)
			return
		}
		c.addMember(g, a.memberID, a, now)
		return
	}
	if g.isFenced(a.instanceID, a.memberID) {
		fail(kerr.FencedInstanceID)
		return
	}
	m := g.byID[a.memberID]
	if m == nil || (a.instanceID != nil && g.static[*a.instanceID] == "") {
		fail(kerr.UnknownMemberID)
		return
	}
	switch g.state {
	case PreparingRebalance:
		c.updateMember(g, m, a)
		c.checkJoin(g, now)
	case CompletingRebalance:
		if m.sameProtocols(a.protocols) {
			a.answer(c.currentGeneration(g, m, m.id == g.leader))
			return
		}
		c.updateMember(g, m, a)
		c.prepareRebalance(g, now)
	case Stable:
		if m.id != g.leader && m.sameProtocols(a.protocols) {
			a.answer(c.currentGeneration(g, m, false))
			return
		}
		c.updateMember(g, m, a)
		c.prepareRebalance(g, now)
	default:
		fail(kerr.UnknownMemberID)
	}
}

// currentGeneration is a JoinGroup answer describing the generation in
// force, with the member list for the leader.
func (c *Coordinator) currentGeneration(g *group, m *member, withMembers bool) joinResult {
	res := joinResult{
		memberID: m.id, generation: g.generation, protocolType: g.protocolType,
		protocol: g.protocol, leader: g.leader,
	}
	if withMembers {
		res.members = g.memberList()
	}
	return res
}

// addMember adds a member whose JoinGroup waits for the rebalance it
// starts (or joins).
func (c *Coordinator) addMember(g *group, id string, a joinArgs, now time.Duration) {
	m := &member{
		id: id, instanceID: a.instanceID, clientID: a.client.ID, clientHost: a.client.Host,
		rebalance: a.rebalance, session: a.session, protocolType: a.protocolType,
		protocols: a.protocols, joinWaiter: a.answer, joinVersion: a.version, isNew: true,
	}
	if g.state == PreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	g.add(m)
	// A new member cannot heartbeat before its join is answered, and a
	// parked join cannot tell a disconnect: bound its wait instead.
	c.touch(g, m, now, c.cfg.NewMemberJoinTimeout)
	if g.canRebalance() {
		c.prepareRebalance(g, now)
	} else {
		c.checkJoin(g, now)
	}
}

// updateMember records a known member's new JoinGroup and parks it. A join
// already parked for the member (a client retry) is answered first, so
// every request gets exactly one answer.
func (c *Coordinator) updateMember(g *group, m *member, a joinArgs) {
	if m.joinWaiter != nil {
		g.answerJoin(m, joinResult{code: kerr.RebalanceInProgress.Code, memberID: m.id, generation: -1})
	}
	m.protocols = a.protocols
	m.rebalance, m.session = a.rebalance, a.session
	g.setJoinWaiter(m, a.answer, a.version)
}

// replaceStatic gives a known static member (old) the new member id of its
// restarted incarnation. The old id's parked requests are fenced.
func (c *Coordinator) replaceStatic(g *group, old *member, newID string, a joinArgs, now time.Duration) {
	oldID, leaderBefore := old.id, g.leader
	g.answerJoin(old, joinResult{code: kerr.FencedInstanceID.Code, memberID: oldID, generation: -1})
	answerSync(old, kerr.FencedInstanceID.Code, nil)
	g.rekey(old, newID)
	m := old
	c.touch(g, m, now, a.session)
	prev := *m
	switch g.state {
	case Stable:
		c.updateMember(g, m, a)
		if g.protocol != nil && g.selectProtocol() == *g.protocol {
			c.confirmStatic(g, m, &prev, oldID, leaderBefore, now)
			return
		}
		c.prepareRebalance(g, now)
	case CompletingRebalance:
		c.updateMember(g, m, a)
		c.prepareRebalance(g, now)
	case PreparingRebalance:
		c.updateMember(g, m, a)
		c.checkJoin(g, now)
	}
}

// confirmStatic persists a static member's new id in a Stable group, then
// answers its join with the generation in force (no rebalance). If the
// write fails, the replacement is undone.
func (c *Coordinator) confirmStatic(g *group, m *member, prev *member, oldID, leaderBefore string, now time.Duration) {
	gen, newID, version := g.generation, m.id, m.joinVersion
	c.storeGroup(g, nil, func(_ time.Duration, code int16) {
		if m.gone || m.id != newID || g.generation != gen || g.state != Stable {
			return // a rebalance took over; it answers the parked join
		}
		if code != 0 {
			g.rekey(m, oldID)
			m.protocols, m.rebalance, m.session = prev.protocols, prev.rebalance, prev.session
			g.answerJoin(m, joinResult{code: code, generation: -1})
			return
		}
		res := c.currentGeneration(g, m, false)
		if version >= 9 {
			if g.leader == newID {
				res.members, res.skipAssignment = g.memberList(), true
			}
		} else {
			// The leader id in force before the replacement: a restarted
			// leader must not think it leads (and reassign) a Stable group.
			res.leader = leaderBefore
		}
		g.answerJoin(m, res)
	})
}

// joinResponder turns a joinResult into the request's response.
func joinResponder(req *kmsg.JoinGroupRequest, respond func(*kmsg.JoinGroupResponse)) func(joinResult) {
	return func(res joinResult) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = res.code
		resp.MemberID = res.memberID
		resp.Generation = res.generation
		resp.LeaderID = res.leader
		resp.Members = res.members
		resp.SkipAssignment = res.skipAssignment
		resp.Protocol = res.protocol
		if res.code == 0 && req.Version >= 7 {
			pt := res.protocolType
			resp.ProtocolType = &pt
		}
		respond(resp)
	}
}

func millis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }
