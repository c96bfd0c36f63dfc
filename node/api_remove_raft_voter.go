package node

// RemoveRaftVoter (key 81), version 0.
//
// Demotes a voter of the controller group to a learner (KIP-853): it keeps
// applying the metadata log as every broker does, but no longer votes.
// Refused, changing nothing, when it would remove the last voter or leave
// the remaining voters without a majority of live members, or while
// another voter change is in progress (voters.go). Answered once committed
// and applied on the broker that took the request. The controller's
// leader may remove itself: it steps down once the change is applied.
// Errors: VOTER_NOT_FOUND, INVALID_REQUEST (the last voter),
// REQUEST_TIMED_OUT (retriable: no live quorum left, a change in progress,
// no controller leader yet).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/consensus"
)

// Authorization: ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED).
func serveRemoveRaftVoter(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.RemoveRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	if resp.ErrorCode = r.voterChangeRefused(c, req, req.ClusterID); resp.ErrorCode != 0 {
		respond(resp)
		return
	}
	r.changeVoter(consensus.VoterRemove, req.VoterID, func(err error) {
		resp.ErrorCode, resp.ErrorMessage = errParts(err)
		respond(resp)
	})
}
