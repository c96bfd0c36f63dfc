package node

// LeaveGroup (key 13), versions 0-5: node/group's (group/leave.go), routed
// to the group's coordinator; answered at once (the rebalance it starts
// goes on without the leaver). v3+ batches members; a coordinator error is
// the top-level error in every version.

import "github.com/twmb/franz-go/pkg/kmsg"

// Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED).
func serveLeaveGroup(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.LeaveGroupRequest)
	co, err := r.coordinatorFor(req.Group)
	if !r.authorize(c, req).group(req.Group, kmsg.ACLOperationRead) {
		co, err = nil, errGroupAuth
	}
	if err != nil {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = err.Code
		respond(resp)
		return
	}
	respond(co.LeaveGroup(r.monoNow(), req))
}
