package node

// InitProducerId (key 22), versions 0-4.
//
// Hands an idempotent producer a cluster-unique producer id at epoch 0.
// Ids come in blocks the controller allocates through its log (so two
// brokers never hand out the same id, even across restarts); a broker
// asks for a new block when its block runs out. A request that waits for a
// block the controller cannot commit (no quorum) is answered
// COORDINATOR_LOAD_IN_PROGRESS at its deadline (expire.go), as Kafka
// answers while a block is on its way (KIP-730); clients retry. v3+ lets a producer that
// already has an id bump its epoch (KIP-360), which resets its sequences;
// at the last epoch it gets a new id instead. With a transactional id the
// request goes to the id's transaction coordinator (node/txn): a first
// InitProducerId gets a new producer id at epoch 0, later ones bump the
// epoch (fencing the previous producer; an open transaction is aborted
// first and the client told CONCURRENT_TRANSACTIONS, which it retries); a
// timeout above transaction.max.timeout.ms gets INVALID_TRANSACTION_TIMEOUT.
// v5 (KIP-890 transactions) is not advertised.
//
// Authorization: a transactional producer needs WRITE on its transactional
// id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent one
// IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679), else
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
	"github.com/floe-broker/floe/node/controller"
)

func serveInitProducerID(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	az := r.authorize(c, req)
	switch {
	case req.TransactionalID != nil && !az.txnID(*req.TransactionalID, kmsg.ACLOperationWrite):
		resp.ErrorCode = errTxnAuth.Code
		respond(resp)
		return
	case req.TransactionalID == nil && !az.sees(kmsg.ACLResourceTypeCluster, acl.ClusterName, kmsg.ACLOperationIdempotentWrite) &&
		!az.mayAny(kmsg.ACLResourceTypeTopic, kmsg.ACLOperationWrite):
		resp.ErrorCode = errClusterAuth.Code
		respond(resp)
		return
	}
	if req.TransactionalID != nil {
		id := *req.TransactionalID
		co, err := r.txnCoordinatorFor(id)
		if err != nil {
			resp.ErrorCode = err.Code
			respond(resp)
			return
		}
		pid, epoch := int64(-1), int16(-1)
		if req.Version >= 3 {
			pid, epoch = req.ProducerID, req.ProducerEpoch
		}
		co.InitProducerID(id, req.TransactionTimeoutMillis, pid, epoch, r.monoNow(), func(pid int64, epoch int16, err *kerr.Error) {
			resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = pid, epoch, codeOf(err)
			respond(resp)
		})
		return
	}
	if req.Version >= 3 && req.ProducerID >= 0 && req.ProducerEpoch >= 0 && req.ProducerEpoch < math.MaxInt16-1 {
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch+1
		respond(resp)
		return
	}
	r.allocProducerID(func(pid int64, err error) {
		if err != nil {
			resp.ErrorCode = errCode(err)
		} else {
			resp.ProducerID, resp.ProducerEpoch = pid, 0
		}
		respond(resp)
	})
}

// producerIDBlock is the block of producer ids the controller gave this
// broker: next is the next to hand out, end is past the last, and waiters
// wait for a new block (one request for it is in flight while they do).
type producerIDBlock struct {
	next, end int64
	waiters   []func(pid int64, err error)
}

// allocProducerID hands out the next id of the block in hand, asking the
// controller for a new block when it runs out.
func (r *Reactor) allocProducerID(done func(pid int64, err error)) {
	b := &r.pids
	if b.next < b.end {
		pid := b.next
		b.next++
		done(pid, nil)
		return
	}
	b.waiters = append(b.waiters, done)
	if len(b.waiters) > 1 {
		return // a block is already on its way
	}
	self := int32(r.self)
	r.propose(&controller.Command{AllocProducerIDs: &self}, func(res controller.Result) {
		waiters := b.waiters
		b.waiters = nil
		if res.Err != nil {
			for _, w := range waiters {
				w(-1, res.Err)
			}
			return
		}
		b.next, b.end = res.ProducerIDBase, res.ProducerIDBase+controller.ProducerIDBlock
		for _, w := range waiters {
			r.allocProducerID(w)
		}
	})
}
