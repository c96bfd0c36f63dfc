package node

// ShareAcknowledge (key 79), versions 0-2 (KIP-932, KIP-1222): a share
// group member's acknowledgements outside a fetch. The session epoch is
// checked as for ShareFetch (0 is INVALID_SHARE_SESSION_EPOCH: an
// acknowledgement cannot open a session; -1 applies the acks, then closes
// the session and releases the member's other records). Each partition's
// batches are applied all or nothing (INVALID_RECORD_STATE for records the
// member does not hold, INVALID_REQUEST for unknown types or malformed
// batches); the changed states are written through Raft and the answer
// waits for the commit (shares.go). v2 answers the lock duration, which a
// renewal (IsRenewAck, KIP-1222) extended the locks by.
//
// Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED at the top
// level), READ on each topic (TOPIC_AUTHORIZATION_FAILED on its
// partitions).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/share"
)

func serveShareAcknowledge(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.ShareAcknowledgeRequest)
	if r.forwardShare(c, derefString(req.GroupID), req, respond) {
		return
	}
	serveShareAcknowledgeVia(r, c, req, 0, respond)
}

// serveShareAcknowledgeVia serves a ShareAcknowledge as the group's
// coordinator, on the session of the broker via that forwarded it.
func serveShareAcknowledgeVia(r *Reactor, c Client, req *kmsg.ShareAcknowledgeRequest, via uint64, respond func(kmsg.Response)) {
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	groupName, member := derefString(req.GroupID), derefString(req.MemberID)
	az := r.authorize(c, req)
	fail := func(err *kerr.Error) {
		resp.ErrorCode = err.Code
		respond(resp)
	}
	if !az.group(groupName, kmsg.ACLOperationRead) {
		fail(errGroupAuth)
		return
	}
	sh, err := r.shareShardFor(groupName)
	if err != nil {
		fail(err)
		return
	}
	s, err := sh.useSession(groupName, member, via, req.ShareSessionEpoch, false)
	if err != nil {
		fail(err)
		return
	}
	dirty := map[share.Key]bool{}
	for _, rt := range req.Topics {
		st := kmsg.NewShareAcknowledgeResponseTopic()
		st.TopicID = rt.TopicID
		t := r.shareTopicByID(rt.TopicID)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = -1, -1
			switch {
			case t == nil:
				sp.ErrorCode = kerr.UnknownTopicID.Code
			case !az.topic(t.Name, kmsg.ACLOperationRead):
				sp.ErrorCode = errTopicAuth.Code
			default:
				k := share.Key{Group: groupName, Topic: t.Name, Partition: rp.Partition}
				acks := make([]share.Ack, len(rp.AcknowledgementBatches))
				for i, b := range rp.AcknowledgementBatches {
					acks[i] = toAck(b.FirstOffset, b.LastOffset, b.AcknowledgeTypes)
				}
				var changed bool
				sp.ErrorCode, changed = r.shareAcks(sh, k, member, acks)
				if changed {
					dirty[k] = true
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	r.advanceSession(sh, groupName, member, via, req.ShareSessionEpoch, s)
	r.writeShareStates(sh, sortedShareKeys(dirty), func(err error) {
		if err != nil {
			for i := range resp.Topics {
				for j := range resp.Topics[i].Partitions {
					if sp := &resp.Topics[i].Partitions[j]; sp.ErrorCode == 0 {
						sp.ErrorCode = kerr.NotLeaderForPartition.Code
					}
				}
			}
		}
		resp.AcquisitionLockTimeoutMillis = int32(r.groupShareConfig(groupName).Lock.Milliseconds())
		respond(resp)
		r.pumpDeadLetters(sh) // a rejection may owe a dead-letter copy
	})
}
