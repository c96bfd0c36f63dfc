package node

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/replica"
)

// topicSpec is a topic creation as a client asked for it.
type topicSpec struct {
	name        string
	partitions  int32 // -1: the broker default
	replication int16 // -1: the broker default
	assignment  [][]int32
	configs     map[string]string
	internal    bool
}

// defaultReplication is the replication factor of a topic created without
// one: the configured default, else min(3, live brokers).
func (r *Reactor) defaultReplication() int16 {
	if r.cfg.DefaultReplication > 0 {
		return r.cfg.DefaultReplication
	}
	n := 0
	for _, id := range r.ctl.state.BrokerIDs() {
		if !r.ctl.state.Brokers[id].Decommissioned {
			n++
		}
	}
	return int16(max(1, min(3, n)))
}

// planTopic validates a topic creation and places its partitions, without
// proposing it. The error carries a message for the client.
func (r *Reactor) planTopic(s topicSpec) (*controller.Topic, error) {
	st := r.ctl.state
	if err := controller.ValidateTopicName(s.name); err != nil {
		return nil, err
	}
	if _, ok := st.Topics[s.name]; ok {
		return nil, kerr.TopicAlreadyExists
	}
	for _, k := range sortedKeys(s.configs) {
		if err := validateTopicConfig(k, s.configs[k]); err != nil {
			return nil, withMessage(kerr.InvalidConfig, err.Error())
		}
	}
	t := &controller.Topic{Name: s.name, Configs: s.configs, Internal: s.internal}
	if len(s.assignment) > 0 {
		if s.partitions != -1 || s.replication != -1 {
			return nil, withMessage(kerr.InvalidRequest, "give either a replica assignment or partitions and replication factor")
		}
		if len(s.assignment) > partitionsPerTopicMax {
			return nil, withMessage(kerr.InvalidPartitions, fmt.Sprintf("at most %d partitions per topic", partitionsPerTopicMax))
		}
		for i, reps := range s.assignment {
			t.Partitions = append(t.Partitions, controller.Partition{Index: int32(i), Replicas: reps, Leader: -1, LeaderEpoch: -1})
		}
		return t, nil
	}
	n, rf := s.partitions, s.replication
	if n == -1 {
		n = r.cfg.DefaultPartitions
	}
	if rf == -1 {
		rf = r.defaultReplication()
	}
	if n <= 0 {
		return nil, kerr.InvalidPartitions
	}
	if n > partitionsPerTopicMax {
		return nil, withMessage(kerr.InvalidPartitions, fmt.Sprintf("at most %d partitions per topic", partitionsPerTopicMax))
	}
	if rf <= 0 {
		return nil, kerr.InvalidReplicationFactor
	}
	ps, err := st.Place(int(n), int(rf), 0, nil)
	if err != nil {
		return nil, withMessage(err, fmt.Sprintf("replication factor %d is larger than the %d available brokers", rf, len(st.Brokers)))
	}
	t.Partitions = ps
	return t, nil
}

// autoCreate creates a topic with the broker defaults, once; concurrent
// Metadata requests for the same missing topic share the creation.
func (r *Reactor) autoCreate(name string) {
	r.autoCreateWith(name, nil)
}

// autoCreateWith is autoCreate with the topic's own configs.
func (r *Reactor) autoCreateWith(name string, configs map[string]string) {
	if r.creating == nil {
		r.creating = map[string]bool{}
	}
	if r.creating[name] {
		return
	}
	t, err := r.planTopic(topicSpec{name: name, partitions: -1, replication: -1, configs: configs})
	if err != nil {
		return
	}
	r.creating[name] = true
	r.propose(&controller.Command{CreateTopic: t}, func(controller.Result) { delete(r.creating, name) })
}

// activeVoters returns the voters of a group the local leader has heard
// from recently (itself included), sorted.
func (r *Reactor) activeVoters(rep *replica.Replica) []uint64 {
	st := rep.Status()
	var out []uint64
	for _, pr := range st.Progress {
		if pr.IsLearner {
			continue
		}
		if pr.ID == r.self || pr.RecentActive {
			out = append(out, pr.ID)
		}
	}
	return out
}

// messageError is a Kafka error with a message for the client.
type messageError struct {
	err *kerr.Error
	msg string
}

func (e *messageError) Error() string { return e.err.Message + ": " + e.msg }
func (e *messageError) Unwrap() error { return e.err }

func withMessage(err error, msg string) error {
	ke, ok := err.(*kerr.Error)
	if !ok {
		ke = kerr.UnknownServerError
	}
	return &messageError{err: ke, msg: msg}
}

// errParts splits an error into a Kafka code and an optional message.
func errParts(err error) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	if me, ok := err.(*messageError); ok {
		m := me.msg
		return me.err.Code, &m
	}
	if ce, ok := err.(*controller.Error); ok {
		m := ce.Message
		return ce.Kafka.Code, &m
	}
	return errCode(err), nil
}
