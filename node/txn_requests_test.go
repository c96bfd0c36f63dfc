package node

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Requests of the transaction APIs, for the API matrices (authorization,
// majority loss) and the transaction tests.

func addPartitionsReq(id string, pid int64, epoch int16, topic string, parts ...int32) *kmsg.AddPartitionsToTxnRequest {
	r := kmsg.NewPtrAddPartitionsToTxnRequest()
	r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch = 3, id, pid, epoch
	t := kmsg.NewAddPartitionsToTxnRequestTopic()
	t.Topic, t.Partitions = topic, parts
	r.Topics = append(r.Topics, t)
	return r
}

func addOffsetsReq(id string, pid int64, epoch int16, group string) *kmsg.AddOffsetsToTxnRequest {
	r := kmsg.NewPtrAddOffsetsToTxnRequest()
	r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = 3, id, pid, epoch, group
	return r
}

func endTxnReq(id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnRequest {
	r := kmsg.NewPtrEndTxnRequest()
	r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = 3, id, pid, epoch, commit
	return r
}

func markersReq(pid int64, epoch int16, commit bool, topic string, part int32) *kmsg.WriteTxnMarkersRequest {
	r := kmsg.NewPtrWriteTxnMarkersRequest()
	r.Version = 1
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = pid, epoch, commit
	t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	t.Topic, t.Partitions = topic, []int32{part}
	m.Topics = append(m.Topics, t)
	r.Markers = append(r.Markers, m)
	return r
}

func txnCommitReq(id string, pid int64, epoch int16, group, member string, gen int32, topic string, part int32, off int64) *kmsg.TxnOffsetCommitRequest {
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch = 3, id, pid, epoch
	r.Group, r.MemberID, r.Generation = group, member, gen
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic = topic
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = part, off
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func describeTxnReq(ids ...string) *kmsg.DescribeTransactionsRequest {
	r := kmsg.NewPtrDescribeTransactionsRequest()
	r.TransactionalIDs = ids
	return r
}

func listTxnReq() *kmsg.ListTransactionsRequest {
	r := kmsg.NewPtrListTransactionsRequest()
	r.Version = 1
	return r
}

// txnAuthCases adds the transaction APIs to the authorization matrix.
func txnAuthCases(cases map[int16]authCase) {
	txnAuth := kerr.TransactionalIDAuthorizationFailed
	cases[24] = authCase{needs: []string{"ALLOW WRITE TRANSACTIONAL_ID LITERAL tx", "ALLOW WRITE TOPIC LITERAL t"}, denied: txnAuth,
		req: func() kmsg.Request { return addPartitionsReq("tx", 1, 0, "t", 0) }}
	cases[25] = authCase{needs: []string{"ALLOW WRITE TRANSACTIONAL_ID LITERAL tx", "ALLOW READ GROUP LITERAL g"}, denied: txnAuth,
		req: func() kmsg.Request { return addOffsetsReq("tx", 1, 0, "g") }}
	cases[26] = authCase{needs: []string{"ALLOW WRITE TRANSACTIONAL_ID LITERAL tx"}, denied: txnAuth,
		req: func() kmsg.Request { return endTxnReq("tx", 1, 0, true) }}
	cases[27] = authCase{needs: []string{"ALLOW CLUSTER_ACTION CLUSTER LITERAL kafka-cluster"}, denied: kerr.ClusterAuthorizationFailed,
		req: func() kmsg.Request { return markersReq(1, 0, false, "t", 0) }}
	cases[28] = authCase{needs: []string{"ALLOW WRITE TRANSACTIONAL_ID LITERAL tx", "ALLOW READ GROUP LITERAL g", "ALLOW READ TOPIC LITERAL t"}, denied: txnAuth,
		req: func() kmsg.Request { return txnCommitReq("tx", 1, 0, "g", "", -1, "t", 0, 1) }}
	cases[65] = authCase{needs: []string{"ALLOW DESCRIBE TRANSACTIONAL_ID LITERAL tx"}, denied: txnAuth,
		req: func() kmsg.Request { return describeTxnReq("tx") }}
	// ListTransactions filters what the client may not see (none here).
	cases[66] = authCase{req: func() kmsg.Request { return listTxnReq() }}
	cases[61] = authCase{needs: []string{"ALLOW READ TOPIC LITERAL t"}, denied: kerr.TopicAuthorizationFailed,
		req: func() kmsg.Request { return describeProducersReq("t", 0) }}
}

func describeProducersReq(topic string, parts ...int32) *kmsg.DescribeProducersRequest {
	r := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	r.Topics = append(r.Topics, rt)
	return r
}

// txnMajorityLossCases adds the transaction APIs to the majority-loss
// matrix: nothing that writes may succeed, and every answer comes within
// the default request timeout.
func txnMajorityLossCases(cases map[int16]apiCase, q, g, member string, gen int32, none time.Duration) {
	cases[24] = apiCase{addPartitionsReq("tx", 1, 0, q, 0), none, true}
	cases[25] = apiCase{addOffsetsReq("tx", 1, 0, g), none, true}
	cases[26] = apiCase{endTxnReq("tx", 1, 0, true), none, true}
	cases[27] = apiCase{markersReq(1, 0, false, q, 0), none, true}
	cases[28] = apiCase{txnCommitReq("tx", 1, 0, g, member, gen, q, 0, 1), none, true}
	cases[65] = apiCase{describeTxnReq("tx"), none, false}
	cases[66] = apiCase{listTxnReq(), none, false}
	cases[61] = apiCase{describeProducersReq(q, 0), none, false}
}
