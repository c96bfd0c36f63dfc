package node

// EndTxn (key 26), versions 0-5.
//
// Commits or aborts the producer's transaction: answered once the decision
// (PrepareCommit or PrepareAbort) is durable in __transaction_state; the
// coordinator then writes the markers and completes the transaction
// (node/txn). A retry of a completed EndTxn succeeds; the other decision
// gets INVALID_TXN_STATE; a fenced producer PRODUCER_FENCED. v5 (KIP-890
// part 2, transaction version 2) bumps the producer epoch with every
// decision and answers the producer id and epoch the client uses next
// (txn.Coordinator.EndTxnV2).
//
// Authorization: WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func serveEndTxn(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	fail := func(code int16) {
		resp.ErrorCode = code
		respond(resp)
	}
	if !r.authorize(c, req).txnID(req.TransactionalID, kmsg.ACLOperationWrite) {
		fail(errTxnAuth.Code)
		return
	}
	co, err := r.txnCoordinatorFor(req.TransactionalID)
	if err != nil {
		fail(err.Code)
		return
	}
	if req.Version >= 5 {
		co.EndTxnV2(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, r.monoNow(), func(pid int64, epoch int16, err *kerr.Error) {
			resp.ProducerID, resp.ProducerEpoch = pid, epoch
			fail(codeOf(err))
		})
		return
	}
	co.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, r.monoNow(), func(err *kerr.Error) {
		fail(codeOf(err))
	})
}
