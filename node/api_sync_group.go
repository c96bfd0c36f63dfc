package node

// SyncGroup (key 14), versions 0-5: node/group's (group/sync.go), routed to
// the group's coordinator. The leader's SyncGroup is answered once its
// assignment is committed to __consumer_offsets; followers wait for it.

import "github.com/twmb/franz-go/pkg/kmsg"

// Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED).
func serveSyncGroup(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.SyncGroupRequest)
	co, err := r.coordinatorFor(req.Group)
	if !r.authorize(c, req).group(req.Group, kmsg.ACLOperationRead) {
		co, err = nil, errGroupAuth
	}
	if err != nil {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = err.Code
		respond(resp)
		return
	}
	co.SyncGroup(r.monoNow(), req, func(resp *kmsg.SyncGroupResponse) { r.answerMaybeLate(bugSyncAnswerDelayed, resp, respond) })
}
