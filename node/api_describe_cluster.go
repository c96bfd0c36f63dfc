package node

// DescribeCluster (key 60), versions 0-1.
//
// The cluster id, the controller (the controller group's Raft leader as this
// broker knows it, -1 when none) and the registered brokers with the Kafka
// addresses they advertise, as Metadata lists them. Floe has no ACLs, so
// authorized operations are never included (the INT32_MIN Kafka sends when
// not asked). v1 asks for an endpoint type: brokers (1) are served;
// controllers (2) are UNSUPPORTED_ENDPOINT_TYPE, since Floe's controllers are
// its brokers and have no endpoint of their own. v2 (fenced brokers) is not
// advertised. Right after a start the answer waits, up to 5 s, for the
// broker's metadata to catch up with the controller (catchup.go, "Held
// cluster listings"), so that a restarted broker does not list a partial
// set of brokers.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
)

// endpointTypeBrokers is DescribeCluster v1's endpoint type for brokers.
const endpointTypeBrokers = 1

// Authorization: DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED);
// the cluster's authorized operations when asked.
func serveDescribeCluster(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	if r.holdListing(serveDescribeCluster, c, kreq, respond) {
		return
	}
	req := kreq.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	az := r.authorize(c, req)
	if !az.cluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode = errClusterAuth.Code
		respond(resp)
		return
	}
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = az.ops(kmsg.ACLResourceTypeCluster, acl.ClusterName)
	}
	if req.Version >= 1 && req.EndpointType != endpointTypeBrokers {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		resp.ErrorMessage = kmsg.StringPtr("only the brokers endpoint type (1) is served")
		respond(resp)
		return
	}
	resp.EndpointType = endpointTypeBrokers
	resp.ClusterID = r.ctl.state.ClusterID
	if lead := r.controllerLeader(); lead != 0 {
		resp.ControllerID = int32(lead)
	}
	for _, mb := range r.metadataBrokers(c.Listener) {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID, b.Host, b.Port, b.Rack = mb.NodeID, mb.Host, mb.Port, mb.Rack
		resp.Brokers = append(resp.Brokers, b)
	}
	respond(resp)
}
