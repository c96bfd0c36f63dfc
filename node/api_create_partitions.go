package node

// CreatePartitions (key 37), versions 0-3.
//
// Grows a topic to Count partitions. Any broker accepts it and forwards the
// change to the controller, answering once its own replica of the metadata
// has applied it and, with timeout_ms > 0, every new partition has its
// leader (as CreateTopics), or REQUEST_TIMED_OUT. The new partitions get
// the topic's replication factor and are placed like a new topic's
// (controller Place, numbered from the current count), unless Assignment
// gives one replica list per new partition: each must name distinct
// registered brokers, as many as the topic's replication factor
// (INVALID_REPLICA_ASSIGNMENT).
// Count at or below the current count is INVALID_PARTITIONS: partitions
// never shrink. A topic named twice is INVALID_REQUEST; so is growing an
// internal topic (the group coordinators hash group ids over
// __consumer_offsets' partition count). ValidateOnly checks and places
// without creating. The versions differ only in encoding (v2 flexible).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
)

// partitionsPerTopicMax bounds a topic's partition count: every partition
// is a Raft group with its own log directory, and a request for billions
// must be refused, not attempted.
const partitionsPerTopicMax = 10000

// Authorization: ALTER on each topic (TOPIC_AUTHORIZATION_FAILED).
func serveCreatePartitions(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	az := r.authorize(c, req)
	g := newGather(func() { respond(resp) })
	deadline := r.requestDeadline(req.TimeoutMillis)
	mentions := map[string]int{}
	for _, rt := range req.Topics {
		mentions[rt.Topic]++
	}
	resp.Topics = make([]kmsg.CreatePartitionsResponseTopic, len(req.Topics))
	for i, rt := range req.Topics {
		st := &resp.Topics[i]
		*st = kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		if mentions[rt.Topic] > 1 {
			st.ErrorCode, st.ErrorMessage = errParts(withMessage(kerr.InvalidRequest, "topic named more than once in the request"))
			continue
		}
		if !az.topic(rt.Topic, kmsg.ACLOperationAlter) {
			st.ErrorCode = errTopicAuth.Code
			continue
		}
		cmd, err := r.planPartitions(rt)
		if err != nil || req.ValidateOnly {
			st.ErrorCode, st.ErrorMessage = errParts(err)
			continue
		}
		g.add()
		r.propose(&controller.Command{CreatePartitions: cmd}, func(res controller.Result) {
			st.ErrorCode, st.ErrorMessage = errParts(res.Err)
			if res.Err != nil || req.TimeoutMillis <= 0 {
				g.done()
				return
			}
			r.awaitLeaders(cmd.Topic, cmd.Partitions[0].Index, deadline, func(err error) {
				st.ErrorCode, st.ErrorMessage = errParts(err)
				g.done()
			})
		})
	}
	g.done()
}

// planPartitions validates a request to grow one topic and places the new
// partitions, without proposing anything.
func (r *Reactor) planPartitions(rt kmsg.CreatePartitionsRequestTopic) (*controller.CreatePartitions, error) {
	st := r.ctl.state
	t, ok := st.Topics[rt.Topic]
	if !ok {
		return nil, kerr.UnknownTopicOrPartition
	}
	if t.Internal {
		return nil, withMessage(kerr.InvalidRequest, fmt.Sprintf("%s is an internal topic; its partition count is fixed", t.Name))
	}
	have := int32(len(t.Partitions))
	switch {
	case rt.Count < have:
		return nil, withMessage(kerr.InvalidPartitions, fmt.Sprintf("topic has %d partitions, more than the %d asked for: partitions never shrink", have, rt.Count))
	case rt.Count == have:
		return nil, withMessage(kerr.InvalidPartitions, fmt.Sprintf("topic already has %d partitions", have))
	case rt.Count > partitionsPerTopicMax:
		return nil, withMessage(kerr.InvalidPartitions, fmt.Sprintf("%d partitions is more than the %d a topic may have", rt.Count, partitionsPerTopicMax))
	}
	rf := len(t.Partitions[0].Replicas)
	add := int(rt.Count - have)
	if len(rt.Assignment) == 0 {
		ps, err := st.Place(add, rf, have, nil)
		if err != nil {
			return nil, withMessage(kerr.InvalidReplicationFactor, fmt.Sprintf("replication factor %d is larger than the %d available brokers", rf, len(st.Brokers)))
		}
		return &controller.CreatePartitions{Topic: t.Name, Partitions: ps}, nil
	}
	if len(rt.Assignment) != add {
		return nil, withMessage(kerr.InvalidReplicaAssignment, fmt.Sprintf("%d replica lists given for %d new partitions", len(rt.Assignment), add))
	}
	cmd := &controller.CreatePartitions{Topic: t.Name}
	for i, a := range rt.Assignment {
		if err := checkAssignment(st, a.Replicas, rf); err != nil {
			return nil, withMessage(kerr.InvalidReplicaAssignment, fmt.Sprintf("partition %d: %v", have+int32(i), err))
		}
		cmd.Partitions = append(cmd.Partitions, controller.Partition{
			Index: have + int32(i), Replicas: append([]int32(nil), a.Replicas...), Leader: -1, LeaderEpoch: -1,
		})
	}
	return cmd, nil
}

// checkAssignment checks one manually assigned replica list.
func checkAssignment(st *controller.State, replicas []int32, rf int) error {
	if len(replicas) != rf {
		return fmt.Errorf("%d replicas, but the topic's replication factor is %d", len(replicas), rf)
	}
	seen := map[int32]bool{}
	for _, id := range replicas {
		if _, ok := st.Brokers[id]; !ok {
			return fmt.Errorf("broker %d is not registered", id)
		}
		if seen[id] {
			return fmt.Errorf("broker %d listed twice", id)
		}
		seen[id] = true
	}
	return nil
}
