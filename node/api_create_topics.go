package node

// CreateTopics (key 19), versions 0-7.
//
// Any broker accepts it and forwards the creation to the controller
// (KIP-590 style). With timeout_ms > 0 it answers, as Kafka does, once
// every new partition has its leader in this broker's applied metadata
// (the preferred replica, which serves reads by then: see replicas.go on the
// first election), or REQUEST_TIMED_OUT when the timeout passes first
// (the topic may then exist all the same). With timeout_ms <= 0 it answers
// once its own replica of the metadata log has applied the creation.
// Partitions and replication factor may be -1 (broker defaults, v4+) or a
// manual replica assignment may be given.
// Configs use Kafka's names and are validated (INVALID_CONFIG with a
// message). ValidateOnly (v1+) checks and places without creating. v5+
// returns the partitions, replication factor and effective configs; v7 the
// topic id.
//
// Authorization: CREATE on the cluster, or else on each topic
// (TOPIC_AUTHORIZATION_FAILED); the configs in the answer (v5+) also need
// DESCRIBE_CONFIGS on the topic, else they are left out and
// ConfigErrorCode (a tagged field) says TOPIC_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
	"github.com/floe-broker/floe/node/controller"
)

func serveCreateTopics(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	az := r.authorize(c, req)
	onCluster := az.sees(kmsg.ACLResourceTypeCluster, acl.ClusterName, kmsg.ACLOperationCreate)
	fill := func(st *kmsg.CreateTopicsResponseTopic, t *controller.Topic) {
		if !az.sees(kmsg.ACLResourceTypeTopic, t.Name, kmsg.ACLOperationDescribeConfigs) {
			st.TopicID, st.NumPartitions = t.ID, int32(len(t.Partitions))
			if len(t.Partitions) > 0 {
				st.ReplicationFactor = int16(len(t.Partitions[0].Replicas))
			}
			st.ConfigErrorCode = errTopicAuth.Code
			return
		}
		r.fillCreated(st, t)
	}
	g := newGather(func() { respond(resp) })
	deadline := r.requestDeadline(req.TimeoutMillis)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	resp.Topics = make([]kmsg.CreateTopicsResponseTopic, len(req.Topics))
	for i, rt := range req.Topics {
		st := &resp.Topics[i]
		*st = kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		if seen[rt.Topic] > 1 {
			st.ErrorCode = kerr.InvalidRequest.Code
			st.ErrorMessage = kmsg.StringPtr("topic named more than once in the request")
			continue
		}
		if !onCluster && !az.topic(rt.Topic, kmsg.ACLOperationCreate) {
			st.ErrorCode = errTopicAuth.Code
			continue
		}
		t, err := r.planTopic(specOf(rt))
		if err != nil {
			st.ErrorCode, st.ErrorMessage = errParts(err)
			continue
		}
		if req.ValidateOnly {
			fill(st, t)
			continue
		}
		g.add()
		r.propose(&controller.Command{CreateTopic: t}, func(res controller.Result) {
			if res.Err != nil {
				st.ErrorCode, st.ErrorMessage = errParts(res.Err)
				g.done()
				return
			}
			if ct, ok := r.ctl.state.Topics[t.Name]; ok {
				fill(st, ct)
			}
			if req.TimeoutMillis <= 0 {
				g.done()
				return
			}
			r.awaitLeaders(t.Name, 0, deadline, func(err error) {
				st.ErrorCode, st.ErrorMessage = errParts(err)
				g.done()
			})
		})
	}
	g.done()
}

func specOf(rt kmsg.CreateTopicsRequestTopic) topicSpec {
	s := topicSpec{name: rt.Topic, partitions: rt.NumPartitions, replication: rt.ReplicationFactor}
	for _, a := range rt.ReplicaAssignment {
		for len(s.assignment) <= int(a.Partition) && a.Partition >= 0 && a.Partition < 1<<16 {
			s.assignment = append(s.assignment, nil)
		}
		if a.Partition >= 0 && int(a.Partition) < len(s.assignment) {
			s.assignment[a.Partition] = append([]int32(nil), a.Replicas...)
		}
	}
	if len(rt.Configs) > 0 {
		s.configs = map[string]string{}
		for _, c := range rt.Configs {
			if c.Value != nil {
				s.configs[c.Name] = *c.Value
			}
		}
	}
	return s
}

// fillCreated reports a topic's shape and effective configs (v5+).
func (r *Reactor) fillCreated(st *kmsg.CreateTopicsResponseTopic, t *controller.Topic) {
	st.TopicID = t.ID
	st.NumPartitions = int32(len(t.Partitions))
	if len(t.Partitions) > 0 {
		st.ReplicationFactor = int16(len(t.Partitions[0].Replicas))
	}
	for _, d := range topicConfigDefs {
		v, source := r.topicConfigValue(t, d.name)
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value = d.name, kmsg.StringPtr(v)
		c.Source = configSource(source)
		st.Configs = append(st.Configs, c)
	}
}

// configSource maps where a config value came from to Kafka's source codes.
func configSource(source string) int8 {
	switch source {
	case "topic":
		return 1 // DYNAMIC_TOPIC_CONFIG
	case "cluster":
		return 3 // DYNAMIC_DEFAULT_BROKER_CONFIG
	case "static":
		return 4 // STATIC_BROKER_CONFIG
	}
	return 5 // DEFAULT_CONFIG
}
