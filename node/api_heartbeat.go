package node

// Heartbeat (key 12), versions 0-4: node/group's (group/sync.go), routed to
// the group's coordinator; answered at once.

import "github.com/twmb/franz-go/pkg/kmsg"

// Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED).
func serveHeartbeat(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.HeartbeatRequest)
	co, err := r.coordinatorFor(req.Group)
	if !r.authorize(c, req).group(req.Group, kmsg.ACLOperationRead) {
		co, err = nil, errGroupAuth
	}
	if err != nil {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = err.Code
		respond(resp)
		return
	}
	r.answerMaybeLate(bugHeartbeatAnswerDelayed, co.Heartbeat(r.monoNow(), req), respond)
}
