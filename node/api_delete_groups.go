package node

// DeleteGroups (key 42), versions 0-2: each group deleted by its
// coordinator (group/admin.go) — only empty groups (NON_EMPTY_GROUP
// otherwise; GROUP_ID_NOT_FOUND for unknown ones). The answer waits until
// every deletion's tombstones are committed or failed.

import "github.com/twmb/franz-go/pkg/kmsg"

// Authorization: DELETE on each group (GROUP_AUTHORIZATION_FAILED).
func serveDeleteGroups(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	az := r.authorize(c, req)
	remaining := len(req.Groups) + 1 // +1: the loop below, so respond runs once at the end
	finish := func() {
		if remaining--; remaining == 0 {
			respond(resp)
		}
	}
	for _, name := range req.Groups {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group = name
		resp.Groups = append(resp.Groups, g)
	}
	for i, name := range req.Groups {
		g := &resp.Groups[i]
		if !az.group(name, kmsg.ACLOperationDelete) {
			g.ErrorCode = errGroupAuth.Code
			finish()
			continue
		}
		co, err := r.coordinatorFor(name)
		if err != nil {
			g.ErrorCode = err.Code
			finish()
			continue
		}
		co.DeleteGroup(r.monoNow(), name, func(code int16) {
			g.ErrorCode = code
			finish()
		})
	}
	finish()
}
