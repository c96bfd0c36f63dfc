package node

// AddOffsetsToTxn (key 25), versions 0-3.
//
// Adds a consumer group's offsets to the producer's transaction: the
// coordinator adds the group's __consumer_offsets partition, whose marker
// later makes the offsets sent with TxnOffsetCommit final (or drops them).
//
// Authorization: WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group
// (GROUP_AUTHORIZATION_FAILED).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/group"
	"github.com/floe-broker/floe/node/txn"
)

func serveAddOffsetsToTxn(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	az := r.authorize(c, req)
	fail := func(code int16) {
		resp.ErrorCode = code
		respond(resp)
	}
	switch {
	case !az.txnID(req.TransactionalID, kmsg.ACLOperationWrite):
		fail(errTxnAuth.Code)
		return
	case !az.group(req.Group, kmsg.ACLOperationRead):
		fail(errGroupAuth.Code)
		return
	}
	t := r.offsetsTopic()
	if t == nil || len(t.Partitions) == 0 {
		r.ensureOffsetsTopic()
		fail(kerr.CoordinatorNotAvailable.Code)
		return
	}
	co, err := r.txnCoordinatorFor(req.TransactionalID)
	if err != nil {
		fail(err.Code)
		return
	}
	tp := txn.TopicPartition{Topic: group.OffsetsTopic, Partition: group.PartitionFor(req.Group, int32(len(t.Partitions)))}
	co.AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp}, r.monoNow(), func(err *kerr.Error) {
		fail(codeOf(err))
	})
}
