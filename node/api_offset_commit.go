package node

// OffsetCommit (key 8), versions 0-8: node/group's (group/offsets.go),
// routed to the group's coordinator. The commit is one batch in
// __consumer_offsets and is answered once committed (acks=all). A
// coordinator error is set on every partition. librdkafka needs v1-2
// advertised; v9+ (KIP-848 member epochs) and v10 (topic ids) are not.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(8, 0, 8, serveOffsetCommit) }

func serveOffsetCommit(r *Reactor, _ Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.OffsetCommitRequest)
	co, err := r.coordinatorFor(req.Group)
	if err != nil {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, err.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		respond(resp)
		return
	}
	co.OffsetCommit(r.monoNow(), req, func(resp *kmsg.OffsetCommitResponse) { respond(resp) })
}
