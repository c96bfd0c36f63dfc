package node

// DescribeTransactions (key 65), version 0.
//
// Describes transactional ids this broker coordinates: state, producer id
// and epoch, timeout, start time and the partitions of the open
// transaction. An id coordinated elsewhere gets NOT_COORDINATOR; an
// unknown one TRANSACTIONAL_ID_NOT_FOUND.
//
// Authorization: DESCRIBE on each transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for it).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func serveDescribeTransactions(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	az := r.authorize(c, req)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		if !az.txnID(id, kmsg.ACLOperationDescribe) {
			st.ErrorCode = errTxnAuth.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		co, err := r.txnCoordinatorFor(id)
		if err != nil {
			st.ErrorCode = err.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		d, ok := co.Describe(id)
		if !ok {
			st.ErrorCode = kerr.TransactionalIDNotFound.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		st.State, st.TimeoutMillis, st.StartTimestamp = d.State.String(), d.TimeoutMs, d.StartMs
		st.ProducerID, st.ProducerEpoch = d.ProducerID, d.ProducerEpoch
		for _, tp := range d.Partitions {
			if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic = tp.Topic
				st.Topics = append(st.Topics, t)
			}
			st.Topics[len(st.Topics)-1].Partitions = append(st.Topics[len(st.Topics)-1].Partitions, tp.Partition)
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	respond(resp)
}
