package node

// AddRaftVoter (key 80), versions 0-1.
//
// Promotes a broker to a voter of the controller group (KIP-853). The
// broker must be registered and already a learner of the group (every
// broker started with --join is) that has caught up; one voter change at
// a time (voters.go). Answered once the change is committed and applied
// on the broker that took the request, whatever AckWhenCommitted says (v1
// lets a client accept an earlier answer; Floe never gives one).
// Errors: DUPLICATE_VOTER, BROKER_NOT_AVAILABLE (not registered),
// INVALID_REQUEST (not a learner, being decommissioned), REQUEST_TIMED_OUT
// (retriable: another change in progress, the learner not caught up, no
// controller leader yet). The listeners and directory id are not used:
// brokers register their addresses themselves.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/consensus"
)

// Authorization: ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED).
func serveAddRaftVoter(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.AddRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
	if resp.ErrorCode = r.voterChangeRefused(c, req, req.ClusterID); resp.ErrorCode != 0 {
		respond(resp)
		return
	}
	r.changeVoter(consensus.VoterAdd, req.VoterID, func(err error) {
		resp.ErrorCode, resp.ErrorMessage = errParts(err)
		respond(resp)
	})
}

// voterChangeRefused is the error code that refuses an AddRaftVoter or
// RemoveRaftVoter request before the change is tried (no ALTER on the
// cluster, or another cluster's id), 0 if none does.
func (r *Reactor) voterChangeRefused(c Client, req kmsg.Request, clusterID *string) int16 {
	if !r.authorize(c, req).cluster(kmsg.ACLOperationAlter) {
		return errClusterAuth.Code
	}
	if clusterID != nil && *clusterID != r.ctl.state.ClusterID {
		return kerr.InconsistentClusterID.Code
	}
	return 0
}
