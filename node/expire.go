package node

// What each API's deadline is, and how it is answered when it passes
// (deadline.go). One table for every API, so a new API cannot be served
// without one: TestEveryAPIHasAnExpiryAnswer checks.
//
// Budgets: the request's own timeout where the protocol has one (Produce
// and DeleteRecords timeout_ms, Fetch max_wait_ms, the admin APIs'
// timeout_ms); for JoinGroup and SyncGroup, which wait for the other
// members by design, the group's rebalance timeout (plus the initial
// rebalance delay for JoinGroup) plus requestTimeoutDefault, a margin that
// leaves the coordinator's own timers to answer; requestTimeoutDefault for
// every other API.
//
// Answers: REQUEST_TIMED_OUT on every topic, partition or resource the
// request named (the operation may still happen, as in Kafka), except:
// the group APIs answer COORDINATOR_NOT_AVAILABLE, which is what Kafka's
// coordinator answers when its log write does not complete (clients look
// the coordinator up again and retry); InitProducerId answers
// COORDINATOR_LOAD_IN_PROGRESS, Kafka's answer while a producer id block is
// still on its way (KIP-730; retried by every client); Fetch answers with
// what is committed now, as at the end of its max wait.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/group"
)

// requestTimeoutDefault bounds a request whose API carries no timeout. It is
// under franz-go's 10 s read deadline for such requests (its
// RequestTimeoutOverhead; Java's request.timeout.ms is 30 s), so the client
// hears an answer instead of dropping the connection. Kafka's own
// offsets.commit.timeout.ms is 5 s; the controller-backed requests (configs,
// producer ids) get a little more room on a loaded machine.
const requestTimeoutDefault = 8 * time.Second

// millisOr returns ms as a duration, or def when ms is not positive.
func millisOr(ms int32, def time.Duration) time.Duration {
	if ms <= 0 {
		return def
	}
	return time.Duration(ms) * time.Millisecond
}

// requestBudget is how long a request may wait for its handler's answer.
func requestBudget(r *Reactor, req kmsg.Request) time.Duration {
	switch q := req.(type) {
	case *kmsg.ProduceRequest:
		return millisOr(q.TimeoutMillis, produceTimeoutDefault)
	case *kmsg.FetchRequest:
		return millisOr(q.MaxWaitMillis, 0)
	case *kmsg.DeleteRecordsRequest:
		return millisOr(q.TimeoutMillis, deleteRecordsTimeoutDefault)
	case *kmsg.CreateTopicsRequest:
		return millisOr(q.TimeoutMillis, requestTimeoutDefault)
	case *kmsg.DeleteTopicsRequest:
		return millisOr(q.TimeoutMillis, requestTimeoutDefault)
	case *kmsg.CreatePartitionsRequest:
		return millisOr(q.TimeoutMillis, requestTimeoutDefault)
	case *kmsg.AlterPartitionAssignmentsRequest:
		return millisOr(q.TimeoutMillis, requestTimeoutDefault)
	case *kmsg.JoinGroupRequest:
		own := millisOr(q.SessionTimeoutMillis, 0)
		if q.Version >= 1 {
			own = millisOr(q.RebalanceTimeoutMillis, 0)
		}
		delay := r.groupConfig().WithDefaults().InitialRebalanceDelay
		return max(own, r.groupRebalanceTimeout(q.Group)) + delay + requestTimeoutDefault
	case *kmsg.SyncGroupRequest:
		return r.groupRebalanceTimeout(q.Group) + requestTimeoutDefault
	}
	return requestTimeoutDefault
}

// groupRebalanceTimeout is the rebalance timeout of a group this broker
// coordinates (0 when it does not know the group). It looks, never loads:
// budgets must not change state.
func (r *Reactor) groupRebalanceTimeout(name string) time.Duration {
	t := r.offsetsTopic()
	if t == nil || len(t.Partitions) == 0 {
		return 0
	}
	sh := r.groups.shards[t.Partitions[group.PartitionFor(name, int32(len(t.Partitions)))].Group]
	if sh == nil {
		return 0
	}
	return sh.coord.RebalanceTimeout(name)
}

// expiredAnswer is the answer a request gets when its deadline passes.
func expiredAnswer(r *Reactor, req kmsg.Request) kmsg.Response {
	timedOut := kerr.RequestTimedOut.Code
	switch q := req.(type) {
	case *kmsg.ProduceRequest:
		return expiredProduce(q)
	case *kmsg.FetchRequest:
		// A fetch naming a topic its client may not read is answered at
		// once (api_fetch.go), so one that waited has none.
		resp, n, _ := r.evalFetch(q, nil)
		r.countFetched(resp, n)
		return resp
	case *kmsg.ListOffsetsRequest:
		return expiredListOffsets(q)
	case *kmsg.MetadataRequest:
		resp := q.ResponseKind().(*kmsg.MetadataResponse)
		resp.ControllerID = -1
		for _, rt := range q.Topics {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.TopicID, mt.ErrorCode = rt.Topic, rt.TopicID, timedOut
			resp.Topics = append(resp.Topics, mt)
		}
		return resp
	case *kmsg.OffsetForLeaderEpochRequest:
		resp := q.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
		for _, rt := range q.Topics {
			st := kmsg.NewOffsetForLeaderEpochResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.LeaderEpoch, sp.EndOffset = rp.Partition, timedOut, -1, -1
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.DeleteRecordsRequest:
		return expiredDeleteRecords(q)
	case *kmsg.InitProducerIDRequest:
		resp := q.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return resp
	}
	if resp := expiredAdmin(req); resp != nil {
		return resp
	}
	if resp := expiredACLs(req); resp != nil {
		return resp
	}
	if resp := expiredTxn(req); resp != nil {
		return resp
	}
	if resp := expiredShare(req); resp != nil {
		return resp
	}
	if resp := expiredConsumer(req); resp != nil { // and telemetry
		return resp
	}
	return expiredGroup(req)
}

func expiredProduce(q *kmsg.ProduceRequest) kmsg.Response {
	resp := q.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range q.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, kerr.RequestTimedOut.Code
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func expiredListOffsets(q *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := q.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range q.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, kerr.RequestTimedOut.Code
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func expiredDeleteRecords(q *kmsg.DeleteRecordsRequest) kmsg.Response {
	resp := q.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range q.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark, sp.ErrorCode = rp.Partition, -1, kerr.RequestTimedOut.Code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// timedOutMessage tells a client whose topic operation timed out that it
// may still happen (the topic may exist, its partitions may have no leader
// yet), as Kafka's message does.
const timedOutMessage = "the request's timeout passed before the operation completed; it may still complete"

// expiredAdmin answers the topic, config and cluster APIs (nil for any
// other request).
func expiredAdmin(req kmsg.Request) kmsg.Response {
	timedOut := kerr.RequestTimedOut.Code
	switch q := req.(type) {
	case *kmsg.CreateTopicsRequest:
		resp := q.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, rt := range q.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.ErrorCode = rt.Topic, timedOut
			st.ErrorMessage = kmsg.StringPtr(timedOutMessage)
			st.NumPartitions, st.ReplicationFactor = -1, -1
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.DeleteTopicsRequest:
		resp := q.ResponseKind().(*kmsg.DeleteTopicsResponse)
		for _, name := range q.TopicNames {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.ErrorCode = kmsg.StringPtr(name), timedOut
			resp.Topics = append(resp.Topics, st)
		}
		for _, rt := range q.Topics {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.TopicID, st.ErrorCode = rt.Topic, rt.TopicID, timedOut
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.CreatePartitionsRequest:
		resp := q.ResponseKind().(*kmsg.CreatePartitionsResponse)
		for _, rt := range q.Topics {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic, st.ErrorCode = rt.Topic, timedOut
			st.ErrorMessage = kmsg.StringPtr(timedOutMessage)
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.DescribeConfigsRequest:
		resp := q.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, rr := range q.Resources {
			rs := kmsg.NewDescribeConfigsResponseResource()
			rs.ResourceType, rs.ResourceName, rs.ErrorCode = rr.ResourceType, rr.ResourceName, timedOut
			resp.Resources = append(resp.Resources, rs)
		}
		return resp
	case *kmsg.AlterConfigsRequest:
		resp := q.ResponseKind().(*kmsg.AlterConfigsResponse)
		for _, rr := range q.Resources {
			rs := kmsg.NewAlterConfigsResponseResource()
			rs.ResourceType, rs.ResourceName, rs.ErrorCode = rr.ResourceType, rr.ResourceName, timedOut
			resp.Resources = append(resp.Resources, rs)
		}
		return resp
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := q.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, rr := range q.Resources {
			rs := kmsg.NewIncrementalAlterConfigsResponseResource()
			rs.ResourceType, rs.ResourceName, rs.ErrorCode = rr.ResourceType, rr.ResourceName, timedOut
			resp.Resources = append(resp.Resources, rs)
		}
		return resp
	case *kmsg.AlterPartitionAssignmentsRequest:
		resp := q.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.ErrorCode = timedOut
		return resp
	case *kmsg.ListPartitionReassignmentsRequest:
		resp := q.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		resp.ErrorCode = timedOut
		return resp
	case *kmsg.ElectLeadersRequest:
		return expiredElectLeaders(q)
	case *kmsg.DescribeLogDirsRequest:
		return expiredDescribeLogDirs(q)
	case *kmsg.DescribeTopicPartitionsRequest:
		resp := q.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
		for _, t := range q.Topics {
			resp.Topics = append(resp.Topics, describeTopicError(t.Topic, timedOut))
		}
		return resp
	case *kmsg.DescribeClusterRequest:
		resp := q.ResponseKind().(*kmsg.DescribeClusterResponse)
		resp.ErrorCode, resp.ControllerID = timedOut, -1
		return resp
	case *kmsg.UnregisterBrokerRequest:
		resp := q.ResponseKind().(*kmsg.UnregisterBrokerResponse)
		resp.ErrorCode = timedOut
		return resp
	case *kmsg.AddRaftVoterRequest:
		resp := q.ResponseKind().(*kmsg.AddRaftVoterResponse)
		resp.ErrorCode = timedOut
		return resp
	case *kmsg.RemoveRaftVoterRequest:
		resp := q.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
		resp.ErrorCode = timedOut
		return resp
	case *kmsg.DescribeQuorumRequest:
		resp := q.ResponseKind().(*kmsg.DescribeQuorumResponse)
		resp.ErrorCode = timedOut
		return resp
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		resp := q.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
		resp.ErrorCode = timedOut
		return resp
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return expiredAlterUsers(q)
	case *kmsg.DescribeClientQuotasRequest:
		resp := q.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
		resp.ErrorCode = timedOut
		return resp
	case *kmsg.AlterClientQuotasRequest:
		resp := q.ResponseKind().(*kmsg.AlterClientQuotasResponse)
		for _, e := range q.Entries {
			res := kmsg.NewAlterClientQuotasResponseEntry()
			res.ErrorCode = timedOut
			for _, p := range e.Entity {
				re := kmsg.NewAlterClientQuotasResponseEntryEntity()
				re.Type, re.Name = p.Type, p.Name
				res.Entity = append(res.Entity, re)
			}
			resp.Entries = append(resp.Entries, res)
		}
		return resp
	}
	return nil
}

// expiredAlterUsers answers every user named, once.
func expiredAlterUsers(q *kmsg.AlterUserSCRAMCredentialsRequest) kmsg.Response {
	resp := q.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	seen := map[string]bool{}
	add := func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode = name, kerr.RequestTimedOut.Code
		resp.Results = append(resp.Results, res)
	}
	for _, d := range q.Deletions {
		add(d.Name)
	}
	for _, u := range q.Upsertions {
		add(u.Name)
	}
	return resp
}

// expiredGroup answers the group APIs: COORDINATOR_NOT_AVAILABLE wherever
// the response has an error code. Every request reaching it is one of them:
// expiredAnswer handled the others.
func expiredGroup(req kmsg.Request) kmsg.Response {
	gone := kerr.CoordinatorNotAvailable.Code
	switch q := req.(type) {
	case *kmsg.OffsetCommitRequest:
		return offsetCommitFailed(q, q.Topics, gone)
	case *kmsg.OffsetFetchRequest:
		resp := q.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.ErrorCode = gone
		for _, rg := range q.Groups {
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group, g.ErrorCode = rg.Group, gone
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	case *kmsg.FindCoordinatorRequest:
		resp := q.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.ErrorCode, resp.NodeID, resp.Port = gone, -1, -1
		keys := q.CoordinatorKeys
		if q.Version < 4 {
			keys = nil
		}
		for _, k := range keys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.Port, c.ErrorCode = k, -1, -1, gone
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp
	case *kmsg.JoinGroupRequest:
		resp := q.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation, resp.MemberID = gone, -1, q.MemberID
		return resp
	case *kmsg.SyncGroupRequest:
		resp := q.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = gone
		return resp
	case *kmsg.HeartbeatRequest:
		resp := q.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = gone
		return resp
	case *kmsg.LeaveGroupRequest:
		resp := q.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = gone
		return resp
	case *kmsg.DescribeGroupsRequest:
		resp := q.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, name := range q.Groups {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = name, gone
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	case *kmsg.ListGroupsRequest:
		resp := q.ResponseKind().(*kmsg.ListGroupsResponse)
		resp.ErrorCode = gone
		return resp
	case *kmsg.DeleteGroupsRequest:
		resp := q.ResponseKind().(*kmsg.DeleteGroupsResponse)
		for _, name := range q.Groups {
			g := kmsg.NewDeleteGroupsResponseGroup()
			g.Group, g.ErrorCode = name, gone
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	case *kmsg.OffsetDeleteRequest:
		resp := q.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = gone
		return resp
	}
	return nil
}
