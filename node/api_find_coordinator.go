package node

// FindCoordinator (key 10), versions 0-4.
//
// Key type 0 (group, the only type v0 has): the coordinator is the leader
// of __consumer_offsets partition PartitionFor(key, N), answered with that
// broker's advertised address. The topic is created on the first request;
// until it exists and the partition has a leader the request waits, up to
// coordinatorWait, then answers COORDINATOR_NOT_AVAILABLE (clients retry).
// Key type 1 (transaction): the same with __transaction_state and the
// transactional id (txns.go). v4 batches
// keys (CoordinatorKeys) and answers each in Coordinators; v0-3 carry one
// key and answer at the top level.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/group"
)

// Authorization: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or on
// the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), per key.
func serveFindCoordinator(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	az := r.authorize(c, req)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	r.awaitMetadata(r.env.Clock.Monotonic()+coordinatorWait, func(expired bool) bool {
		resp, wait := r.coordinators(req, az, keys, c.Listener)
		if wait && !expired {
			return false
		}
		respond(resp)
		return true
	})
}

// coordinatorWait bounds how long a FindCoordinator waits for a
// coordinator that is on its way (the offsets topic being created, its
// partition electing a leader), so that a client's first request finds
// it instead of an error that not every client retries (kadm's
// FetchOffsets does not). It is under every client's request timeout.
const coordinatorWait = 5 * time.Second

// coordinators answers each key, and reports whether any answer is an
// error that waiting may cure.
func (r *Reactor) coordinators(req *kmsg.FindCoordinatorRequest, az *authz, keys []string, listener string) (*kmsg.FindCoordinatorResponse, bool) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	wait := false
	for _, key := range keys {
		var denied *kerr.Error
		switch {
		case req.CoordinatorType == 0 && !az.group(key, kmsg.ACLOperationDescribe):
			denied = errGroupAuth
		case req.CoordinatorType == 1 && !az.txnID(key, kmsg.ACLOperationDescribe):
			denied = errTxnAuth
		}
		if denied != nil {
			co := kmsg.NewFindCoordinatorResponseCoordinator()
			co.Key, co.NodeID, co.Port, co.ErrorCode = key, -1, -1, denied.Code
			resp.Coordinators = append(resp.Coordinators, co)
			continue
		}
		co, coming := r.findCoordinator(key, req.CoordinatorType, listener)
		wait = wait || coming
		resp.Coordinators = append(resp.Coordinators, co)
	}
	if req.Version < 4 {
		c := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
	}
	return resp, wait
}

// findCoordinator answers one key; coming reports an error the metadata
// may soon cure (the offsets topic is being created, or its partition has
// no leader yet).
func (r *Reactor) findCoordinator(key string, keyType int8, listener string) (c kmsg.FindCoordinatorResponseCoordinator, coming bool) {
	c = kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	fail := func(err error) { c.ErrorCode, c.ErrorMessage = errParts(err) }
	t, ensure := r.offsetsTopic(), r.ensureOffsetsTopic
	switch keyType {
	case 0:
	case 1:
		t, ensure = r.txnTopic(), r.ensureTxnTopic
	default:
		fail(kerr.InvalidRequest)
		return c, false
	}
	if t == nil || len(t.Partitions) == 0 {
		ensure()
		fail(kerr.CoordinatorNotAvailable)
		return c, true
	}
	// Both internal topics place a key with Kafka's hash (txn.PartitionFor
	// is group.PartitionFor).
	leader, _ := r.partitionLeader(&t.Partitions[group.PartitionFor(key, int32(len(t.Partitions)))])
	b := r.ctl.state.Brokers[leader]
	if leader < 0 || b == nil || r.buggify(bugFindCoordinatorNotAvailable) {
		fail(kerr.CoordinatorNotAvailable)
		return c, true
	}
	host, port, ok := b.Address(listener)
	if !ok {
		fail(withMessage(kerr.CoordinatorNotAvailable, "the coordinator has no address on this listener"))
		return c, false
	}
	c.NodeID, c.Host, c.Port = b.ID, host, port
	return c, false
}
