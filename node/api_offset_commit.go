package node

// OffsetCommit (key 8), versions 0-9: node/group's (group/offsets.go),
// routed to the group's coordinator. The commit is one batch in
// __consumer_offsets and is answered once committed (acks=all). A
// coordinator error is set on every partition. librdkafka needs v1-2
// advertised. v9 (KIP-848) has the same fields as v8: for a consumer
// group the generation is the member epoch (STALE_MEMBER_EPOCH when it is
// not the member's). v10 (topic ids) is not served.

import "github.com/twmb/franz-go/pkg/kmsg"

// Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED on every
// partition), then READ on each topic (TOPIC_AUTHORIZATION_FAILED on its
// partitions, while the others are committed).
func serveOffsetCommit(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.OffsetCommitRequest)
	az := r.authorize(c, req)
	if !az.group(req.Group, kmsg.ACLOperationRead) {
		respond(offsetCommitFailed(req, req.Topics, errGroupAuth.Code))
		return
	}
	denied := deniedTopics(az, req.Topics, func(t kmsg.OffsetCommitRequestTopic) string { return t.Topic }, kmsg.ACLOperationRead)
	allowed := *req
	allowed.Topics = nil
	var refused []kmsg.OffsetCommitRequestTopic
	for _, rt := range req.Topics {
		if denied[rt.Topic] {
			refused = append(refused, rt)
		} else {
			allowed.Topics = append(allowed.Topics, rt)
		}
	}
	done := func(resp *kmsg.OffsetCommitResponse) {
		resp.Topics = append(resp.Topics, offsetCommitFailed(req, refused, errTopicAuth.Code).Topics...)
		respond(resp)
	}
	co, err := r.coordinatorFor(req.Group)
	switch {
	case err != nil:
		done(offsetCommitFailed(req, allowed.Topics, err.Code))
	case len(allowed.Topics) == 0 && len(refused) > 0:
		done(req.ResponseKind().(*kmsg.OffsetCommitResponse))
	default:
		co.OffsetCommit(r.monoNow(), &allowed, done)
	}
}

// offsetCommitFailed answers every partition of topics with code.
func offsetCommitFailed(req *kmsg.OffsetCommitRequest, topics []kmsg.OffsetCommitRequestTopic, code int16) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, rt := range topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
