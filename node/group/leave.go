package group

// LeaveGroup (key 13), versions 0-5.
//
// v0-2 name one member; v3+ (KIP-345) name a batch, each by member id or,
// with an empty member id, by group.instance.id (how an operator removes a
// static member). Each member leaves at once and the group rebalances; a
// member id handed out with MEMBER_ID_REQUIRED may also be withdrawn. A
// static member whose instance id now belongs to another member id gets
// FENCED_INSTANCE_ID. v0-2 report the member's error as the top-level
// error; v3+ per member. v5 adds a reason, which is ignored.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaveGroup serves a LeaveGroup request.
func (c *Coordinator) LeaveGroup(now time.Duration, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	leaving := req.Members
	if req.Version < 3 {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = req.MemberID
		leaving = []kmsg.LeaveGroupRequestMember{lm}
	}
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	g := c.groups[req.Group]
	codes := make([]int16, len(leaving))
	for i, lm := range leaving {
		if g == nil {
			codes[i] = kerr.UnknownMemberID.Code
			continue
		}
		if g.cons != nil {
			codes[i] = c.classicLeaveConsumer(g, lm, now)
			continue
		}
		codes[i] = c.leaveOne(g, lm, now)
	}
	if req.Version < 3 {
		resp.ErrorCode = codes[0]
		return resp
	}
	for i, lm := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = lm.MemberID, lm.InstanceID, codes[i]
		resp.Members = append(resp.Members, rm)
	}
	return resp
}

func (c *Coordinator) leaveOne(g *group, lm kmsg.LeaveGroupRequestMember, now time.Duration) int16 {
	if lm.MemberID == "" {
		if lm.InstanceID != nil {
			if m := g.byID[g.static[*lm.InstanceID]]; m != nil {
				c.removeMember(g, m, now)
				return 0
			}
		}
		return kerr.UnknownMemberID.Code
	}
	if _, ok := g.pending[lm.MemberID]; ok {
		delete(g.pending, lm.MemberID)
		c.checkJoin(g, now)
		return 0
	}
	if g.isFenced(lm.InstanceID, lm.MemberID) {
		return kerr.FencedInstanceID.Code
	}
	m := g.byID[lm.MemberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	c.removeMember(g, m, now)
	return 0
}

// removeMember takes a member out (it left, or its session ended) and
// rebalances the rest. Its parked requests are answered UNKNOWN_MEMBER_ID,
// so a member that is in fact alive joins again.
func (c *Coordinator) removeMember(g *group, m *member, now time.Duration) {
	g.answerJoin(m, joinResult{code: kerr.UnknownMemberID.Code, generation: -1})
	answerSync(m, kerr.UnknownMemberID.Code, nil)
	g.remove(m.id)
	switch g.state {
	case Stable, CompletingRebalance:
		c.prepareRebalance(g, now)
	case PreparingRebalance:
		c.checkJoin(g, now)
	}
}
