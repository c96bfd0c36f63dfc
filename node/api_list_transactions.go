package node

// ListTransactions (key 66), versions 0-1.
//
// Lists the transactional ids this broker coordinates (clients ask every
// broker), filtered by state names and producer ids; v1's duration filter
// keeps transactions running longer than it. A state name that is not one
// of the coordinator's is returned in UnknownStateFilters.
//
// Authorization: DESCRIBE on a transactional id, else it is left out of
// the list (as Kafka filters).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/txn"
)

func serveListTransactions(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	az := r.authorize(c, req)
	var states []txn.State
	for _, name := range req.StateFilters {
		if s, ok := txn.ParseState(name); ok {
			states = append(states, s)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	if len(req.StateFilters) > 0 && len(states) == 0 {
		respond(resp)
		return
	}
	nowMs := r.env.Clock.Now().UnixMilli()
	r.txnsSync()
	for _, g := range sortedKeys(r.txns.shards) {
		for _, d := range r.txns.shards[g].coord.List(states, req.ProducerIDFilters) {
			if req.Version >= 1 && req.DurationFilterMillis >= 0 && (d.StartMs < 0 || nowMs-d.StartMs < req.DurationFilterMillis) {
				continue
			}
			if !az.txnID(d.TransactionalID, kmsg.ACLOperationDescribe) {
				continue
			}
			ts := kmsg.NewListTransactionsResponseTransactionState()
			ts.TransactionalID, ts.ProducerID, ts.TransactionState = d.TransactionalID, d.ProducerID, d.State.String()
			resp.TransactionStates = append(resp.TransactionStates, ts)
		}
	}
	respond(resp)
}
