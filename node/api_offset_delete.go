package node

// OffsetDelete (key 47), version 0: node/group's (group/offsets.go),
// routed to the group's coordinator; answered once the tombstones are
// committed. Offsets of topics the group is consuming are kept
// (GROUP_SUBSCRIBED_TO_TOPIC).

import "github.com/twmb/franz-go/pkg/kmsg"

// Authorization: DELETE on the group (GROUP_AUTHORIZATION_FAILED), then
// READ on each topic (TOPIC_AUTHORIZATION_FAILED on its partitions, while
// the others are deleted).
func serveOffsetDelete(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	az := r.authorize(c, req)
	co, err := r.coordinatorFor(req.Group)
	if !az.group(req.Group, kmsg.ACLOperationDelete) {
		co, err = nil, errGroupAuth
	}
	if err != nil {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = err.Code
		respond(resp)
		return
	}
	denied := deniedTopics(az, req.Topics, func(t kmsg.OffsetDeleteRequestTopic) string { return t.Topic }, kmsg.ACLOperationRead)
	allowed := *req
	allowed.Topics = nil
	var refused []kmsg.OffsetDeleteResponseTopic
	for _, rt := range req.Topics {
		if !denied[rt.Topic] {
			allowed.Topics = append(allowed.Topics, rt)
			continue
		}
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, errTopicAuth.Code
			st.Partitions = append(st.Partitions, sp)
		}
		refused = append(refused, st)
	}
	co.OffsetDelete(r.monoNow(), &allowed, func(resp *kmsg.OffsetDeleteResponse) {
		resp.Topics = append(resp.Topics, refused...)
		respond(resp)
	})
}
