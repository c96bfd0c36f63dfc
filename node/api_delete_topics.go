package node

// DeleteTopics (key 20), versions 0-6.
//
// Any broker accepts it and forwards each deletion to the controller, as
// CreateTopics does, answering once its own replica of the metadata log has
// applied it (every broker then drops its replicas of the topic's
// partitions), or REQUEST_TIMED_OUT. v0-5 name topics in TopicNames; v6
// names each topic by name or by id (not both: INVALID_REQUEST; an unknown
// id is UNKNOWN_TOPIC_ID) and the answer carries both. A topic named twice
// is INVALID_REQUEST for every mention. Internal topics (__consumer_offsets)
// are refused with INVALID_REQUEST: the group coordinators live on them.
// v5+ carries error messages.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
)

// Authorization: DELETE on each topic (TOPIC_AUTHORIZATION_FAILED); a
// topic asked for by an id the client may not delete gets it too, with
// the id only.
func serveDeleteTopics(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	asked := req.Topics
	if req.Version < 6 {
		asked = nil
		for _, name := range req.TopicNames {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			asked = append(asked, rt)
		}
	}
	g := newGather(func() { respond(resp) })
	resp.Topics = make([]kmsg.DeleteTopicsResponseTopic, len(asked))
	names := r.deleteTargets(asked)
	az := r.authorize(c, req)
	for i, rt := range asked {
		st := &resp.Topics[i]
		*st = kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		name, err := names[i].name, names[i].err
		if authName := topicNameOf(rt.Topic, r.ctl.state.Topics[name]); authName != "" && !az.topic(authName, kmsg.ACLOperationDelete) {
			st.ErrorCode = errTopicAuth.Code
			continue
		}
		if err == nil {
			st.Topic = kmsg.StringPtr(name)
			st.TopicID = r.ctl.state.Topics[name].ID
		}
		if err != nil {
			st.ErrorCode, st.ErrorMessage = errParts(err)
			continue
		}
		g.add()
		r.propose(&controller.Command{DeleteTopic: &name}, func(res controller.Result) {
			st.ErrorCode, st.ErrorMessage = errParts(res.Err)
			g.done()
		})
	}
	g.done()
}

// deleteTarget is a DeleteTopics entry resolved to a topic name, or why it
// cannot be deleted.
type deleteTarget struct {
	name string
	err  error
}

// deleteTargets resolves every entry against the applied metadata.
func (r *Reactor) deleteTargets(asked []kmsg.DeleteTopicsRequestTopic) []deleteTarget {
	st := r.ctl.state
	out := make([]deleteTarget, len(asked))
	mentions := map[string]int{}
	for i, rt := range asked {
		out[i] = resolveDeleteTarget(st, rt)
		if out[i].err == nil {
			mentions[out[i].name]++
		}
	}
	for i := range out {
		if out[i].err == nil && mentions[out[i].name] > 1 {
			out[i].err = withMessage(kerr.InvalidRequest, "topic named more than once in the request")
		}
	}
	return out
}

func resolveDeleteTarget(st *controller.State, rt kmsg.DeleteTopicsRequestTopic) deleteTarget {
	noID := rt.TopicID == [16]byte{}
	switch {
	case rt.Topic != nil && !noID:
		return deleteTarget{err: withMessage(kerr.InvalidRequest, "give a topic name or a topic id, not both")}
	case rt.Topic == nil && noID:
		return deleteTarget{err: withMessage(kerr.InvalidRequest, "neither a topic name nor a topic id was given")}
	}
	t := lookupTopic(st, rt.Topic, rt.TopicID)
	if t == nil {
		if rt.Topic == nil {
			return deleteTarget{err: kerr.UnknownTopicID}
		}
		return deleteTarget{err: kerr.UnknownTopicOrPartition}
	}
	if t.Internal {
		return deleteTarget{err: withMessage(kerr.InvalidRequest, fmt.Sprintf("%s is an internal topic and cannot be deleted", t.Name))}
	}
	return deleteTarget{name: t.Name}
}
