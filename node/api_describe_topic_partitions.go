package node

// DescribeTopicPartitions (key 75), version 0 (KIP-966).
//
// Metadata's topic half, paged: Kafka's admin client (3.8+, kafka-topics
// --describe) lists topics with it, and consoles use it for clusters with
// many partitions. The answer holds the requested topics (every topic the
// client may DESCRIBE when the list is empty) in name order, from the
// cursor's topic and partition on, with at most
// min(ResponsePartitionLimit, describeTopicPartitionsMax) partitions; when
// partitions are left over, NextCursor names the first of them.
//
// Each partition is what Metadata says of it (leader, epoch, replicas,
// ISR: api_metadata.go). Floe's partitions are Raft groups: the eligible
// leader replicas of KIP-966 are every voter Raft may elect, and Raft
// elects only one holding every committed record, so ELR is the ISR and
// the last known ELR and offline replicas are empty.
//
// As Kafka's handler does: a named topic the client may not DESCRIBE is
// answered TOPIC_AUTHORIZATION_FAILED (with no id, so its existence is
// not disclosed), an unknown one UNKNOWN_TOPIC_OR_PARTITION; a listing of
// every topic leaves out, silently, what the client may not see; a cursor
// whose topic is not among the named topics is INVALID_REQUEST (each
// named topic is answered with it), and so is a partition limit below 1.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
)

// describeTopicPartitionsMax is Kafka's max.request.partition.size.limit
// default: the most partitions one answer carries.
const describeTopicPartitionsMax = 2000

func serveDescribeTopicPartitions(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	az := r.authorize(c, req)
	all := len(req.Topics) == 0
	cursorTopic, cursorPart := "", int32(0)
	if req.Cursor != nil {
		cursorTopic, cursorPart = req.Cursor.Topic, req.Cursor.Partition
	}
	if req.ResponsePartitionLimit < 1 || cursorPart < 0 || (!all && req.Cursor != nil && !slices.ContainsFunc(req.Topics,
		func(t kmsg.DescribeTopicPartitionsRequestTopic) bool { return t.Topic == cursorTopic })) {
		for _, t := range req.Topics {
			resp.Topics = append(resp.Topics, describeTopicError(t.Topic, kerr.InvalidRequest.Code))
		}
		respond(resp)
		return
	}
	st := r.ctl.state
	var names []string
	if all {
		names = st.TopicNames()
	} else {
		for _, t := range req.Topics {
			names = append(names, t.Topic)
		}
		slices.Sort(names)
		names = slices.Compact(names)
	}
	var denied []kmsg.DescribeTopicPartitionsResponseTopic
	var shown []string
	for _, name := range names {
		switch {
		case name < cursorTopic:
		case all && !az.sees(kmsg.ACLResourceTypeTopic, name, kmsg.ACLOperationDescribe):
		case !all && !az.topic(name, kmsg.ACLOperationDescribe):
			denied = append(denied, describeTopicError(name, errTopicAuth.Code))
		default:
			shown = append(shown, name)
		}
	}
	if len(shown) == 0 || shown[0] != cursorTopic {
		cursorPart = 0 // the cursor's topic is gone or hidden: start the next one at its beginning
	}
	budget := min(req.ResponsePartitionLimit, describeTopicPartitionsMax)
	for i, name := range shown {
		from := int32(0)
		if i == 0 {
			from = cursorPart
		}
		t := st.Topics[name]
		if t == nil {
			resp.Topics = append(resp.Topics, describeTopicError(name, kerr.UnknownTopicOrPartition.Code))
			continue
		}
		dt, next := r.describeTopicPartitions(t, from, &budget)
		dt.AuthorizedOperations = az.ops(kmsg.ACLResourceTypeTopic, name)
		resp.Topics = append(resp.Topics, dt)
		if next >= 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: next}
			break
		}
		if budget == 0 && i+1 < len(shown) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: shown[i+1], Partition: 0}
			break
		}
	}
	resp.Topics = append(resp.Topics, denied...)
	respond(resp)
}

// describeTopicPartitions answers t's partitions from index from on while
// the budget lasts; next is the first partition left out, or -1.
func (r *Reactor) describeTopicPartitions(t *controller.Topic, from int32, budget *int32) (kmsg.DescribeTopicPartitionsResponseTopic, int32) {
	mt := r.metadataTopic(t)
	dt := kmsg.NewDescribeTopicPartitionsResponseTopic()
	dt.Topic, dt.TopicID, dt.IsInternal = kmsg.StringPtr(t.Name), t.ID, t.Internal
	for _, mp := range mt.Partitions {
		if mp.Partition < from {
			continue
		}
		if *budget == 0 {
			return dt, mp.Partition
		}
		*budget--
		dp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
		dp.ErrorCode, dp.Partition, dp.LeaderID, dp.LeaderEpoch = mp.ErrorCode, mp.Partition, mp.Leader, mp.LeaderEpoch
		dp.Replicas, dp.ISR = mp.Replicas, mp.ISR
		dp.EligibleLeaderReplicas = append([]int32(nil), mp.ISR...)
		dp.LastKnownELR, dp.OfflineReplicas = []int32{}, []int32{}
		dt.Partitions = append(dt.Partitions, dp)
	}
	return dt, -1
}

// describeTopicError is a topic answered with an error and nothing else.
func describeTopicError(name string, code int16) kmsg.DescribeTopicPartitionsResponseTopic {
	dt := kmsg.NewDescribeTopicPartitionsResponseTopic()
	dt.Topic, dt.ErrorCode = kmsg.StringPtr(name), code
	return dt
}
