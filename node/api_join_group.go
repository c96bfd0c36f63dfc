package node

// JoinGroup (key 11), versions 0-9. The protocol is node/group's (see
// group/join.go); this handler finds the group's coordinator: a broker
// that does not lead the group's __consumer_offsets partition answers
// NOT_COORDINATOR, one still rebuilding it COORDINATOR_LOAD_IN_PROGRESS.
// librdkafka needs v0 advertised exactly. The answer may come much later,
// when the rebalance completes.

import "github.com/twmb/franz-go/pkg/kmsg"

// Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED).
func serveJoinGroup(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.JoinGroupRequest)
	co, err := r.coordinatorFor(req.Group)
	if !r.authorize(c, req).group(req.Group, kmsg.ACLOperationRead) {
		co, err = nil, errGroupAuth
	}
	if err != nil {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation, resp.MemberID = err.Code, -1, req.MemberID
		respond(resp)
		return
	}
	co.JoinGroup(r.monoNow(), groupClient(c), req, func(resp *kmsg.JoinGroupResponse) { r.answerMaybeLate(bugJoinAnswerDelayed, resp, respond) })
}
