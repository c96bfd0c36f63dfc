package node

// OffsetDelete (key 47), version 0: node/group's (group/offsets.go),
// routed to the group's coordinator; answered once the tombstones are
// committed. Offsets of topics the group is consuming are kept
// (GROUP_SUBSCRIBED_TO_TOPIC).

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(47, 0, 0, serveOffsetDelete) }

func serveOffsetDelete(r *Reactor, _ Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	co, err := r.coordinatorFor(req.Group)
	if err != nil {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = err.Code
		respond(resp)
		return
	}
	co.OffsetDelete(r.monoNow(), req, func(resp *kmsg.OffsetDeleteResponse) { respond(resp) })
}
