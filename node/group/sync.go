package group

// SyncGroup (key 14), versions 0-5, and Heartbeat (key 12), versions 0-4.
//
// SyncGroup: in CompletingRebalance every member parks its SyncGroup; the
// leader's carries the assignment, which is written to __consumer_offsets
// with the generation and, once committed, handed to every member and the
// group turns Stable. In Stable a member simply gets its assignment again.
// Members missing from the leader's assignment get an empty one (as in
// Kafka). v3+ carries group.instance.id (fencing); v5+ the protocol type
// and name, which must match the group's.
//
// Heartbeat: keeps a member's session alive. REBALANCE_IN_PROGRESS while
// the group prepares a rebalance tells the member to rejoin; a member of
// an older generation gets ILLEGAL_GENERATION.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup serves a SyncGroup request. respond is called exactly once:
// now, when the leader's assignment is written, or when the rebalance is
// restarted.
func (c *Coordinator) SyncGroup(now time.Duration, req *kmsg.SyncGroupRequest, respond func(*kmsg.SyncGroupResponse)) {
	var g *group
	answer := func(code int16, assignment []byte) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = code
		resp.MemberAssignment = assignment
		if code == 0 && req.Version >= 5 && g != nil {
			pt := g.protocolType
			resp.ProtocolType, resp.Protocol = &pt, g.protocol
		}
		respond(resp)
	}
	if req.Group == "" {
		answer(kerr.InvalidGroupID.Code, nil)
		return
	}
	g = c.groups[req.Group]
	var instanceID *string
	if req.Version >= 3 {
		instanceID = req.InstanceID
	}
	if g != nil && g.cons != nil {
		code, as := c.classicSyncConsumer(now, g, req, instanceID)
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode, resp.MemberAssignment = code, as
		if code == 0 && req.Version >= 5 {
			pt := "consumer"
			resp.ProtocolType, resp.Protocol = &pt, req.Protocol
		}
		respond(resp)
		return
	}
	if e := checkSync(g, req, instanceID); e != nil {
		answer(e.Code, nil)
		return
	}
	m := g.byID[req.MemberID]
	switch g.state {
	case Empty:
		answer(kerr.UnknownMemberID.Code, nil)
	case PreparingRebalance:
		answer(kerr.RebalanceInProgress.Code, nil)
	case Stable:
		delete(g.pendingSync, m.id)
		c.touch(g, m, now, m.session)
		answer(0, m.assignment)
	case CompletingRebalance:
		answerSync(m, kerr.RebalanceInProgress.Code, nil) // a retried sync replaces the parked one
		m.syncWaiter = answer
		delete(g.pendingSync, m.id)
		c.touch(g, m, now, m.session)
		if m.id == g.leader {
			c.storeAssignments(g, req.GroupAssignment)
		}
	default:
		answer(kerr.CoordinatorNotAvailable.Code, nil)
	}
}

// checkSync validates a SyncGroup against the group, in Kafka's order.
func checkSync(g *group, req *kmsg.SyncGroupRequest, instanceID *string) *kerr.Error {
	switch {
	case g == nil:
		return kerr.UnknownMemberID
	case g.isFenced(instanceID, req.MemberID):
		return kerr.FencedInstanceID
	case g.byID[req.MemberID] == nil:
		return kerr.UnknownMemberID
	case req.Generation != g.generation:
		return kerr.IllegalGeneration
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType:
		return kerr.InconsistentGroupProtocol
	case req.Protocol != nil && (g.protocol == nil || *req.Protocol != *g.protocol):
		return kerr.InconsistentGroupProtocol
	}
	return nil
}

// storeAssignments writes the leader's assignment with the generation; once
// committed the group is Stable and every parked SyncGroup is answered. If
// the group moved on meanwhile, the outcome is moot.
func (c *Coordinator) storeAssignments(g *group, in []kmsg.SyncGroupRequestGroupAssignment) {
	assignments := make(map[string][]byte, len(g.members))
	for _, a := range in {
		if g.byID[a.MemberID] != nil {
			assignments[a.MemberID] = a.MemberAssignment
		}
	}
	for _, m := range g.members {
		if _, ok := assignments[m.id]; !ok {
			assignments[m.id] = []byte{}
		}
	}
	gen := g.generation
	c.storeGroup(g, assignments, func(now time.Duration, code int16) {
		if c.closed || g.state != CompletingRebalance || g.generation != gen {
			return
		}
		if code != 0 {
			c.propagateAssignments(g, now, code, nil)
			c.prepareRebalance(g, now)
			return
		}
		g.setState(Stable, c.wallMillis())
		c.propagateAssignments(g, now, 0, assignments)
	})
}

// Heartbeat serves a Heartbeat request.
func (c *Coordinator) Heartbeat(now time.Duration, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	var instanceID *string
	if req.Version >= 3 {
		instanceID = req.InstanceID
	}
	resp.ErrorCode = c.heartbeat(now, req.Group, req.MemberID, instanceID, req.Generation)
	return resp
}

func (c *Coordinator) heartbeat(now time.Duration, name, memberID string, instanceID *string, generation int32) int16 {
	if name == "" {
		return kerr.InvalidGroupID.Code
	}
	g := c.groups[name]
	if g != nil && g.cons != nil {
		return c.classicHeartbeatConsumer(now, g, memberID, instanceID, generation)
	}
	switch {
	case g == nil || g.state == Empty:
		return kerr.UnknownMemberID.Code
	case g.isFenced(instanceID, memberID):
		return kerr.FencedInstanceID.Code
	case g.byID[memberID] == nil:
		return kerr.UnknownMemberID.Code
	case generation != g.generation:
		return kerr.IllegalGeneration.Code
	}
	m := g.byID[memberID]
	c.touch(g, m, now, m.session)
	if g.state == PreparingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}
