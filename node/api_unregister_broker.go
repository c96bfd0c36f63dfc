package node

// UnregisterBroker (key 64), version 0.
//
// Decommissions a broker: the controller marks it, stops placing new
// replicas on it, and moves every replica it holds to other brokers (one
// partition at a time, by reassignment, so nothing is ever under-replicated
// by the move). Once it holds none it leaves Metadata, and can be shut
// down. BROKER_NOT_AVAILABLE if the id is not registered.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
)

// Authorization: ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED).
func serveUnregisterBroker(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.UnregisterBrokerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	if !r.authorize(c, req).cluster(kmsg.ACLOperationAlter) {
		resp.ErrorCode = errClusterAuth.Code
		respond(resp)
		return
	}
	id := req.BrokerID
	r.propose(&controller.Command{Decommission: &id}, func(res controller.Result) {
		resp.ErrorCode, resp.ErrorMessage = errParts(res.Err)
		respond(resp)
	})
}
