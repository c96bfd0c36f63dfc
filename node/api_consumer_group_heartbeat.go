package node

// ConsumerGroupHeartbeat (key 68), versions 0-1 (KIP-848): node/group's
// (group/consumer_heartbeat.go), routed to the group's coordinator, which
// answers once the group's record is durable (or at once when nothing
// changed). v0 has the coordinator make the member id when it is empty;
// v1 (Kafka 4.0) has the client make it and adds SubscribedTopicRegex.
// Server-side assignment sees the topics that exist (consumerTopics), with
// the racks of their replicas' brokers for rack-aware assignment.
//
// Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED); then, as
// Kafka 4.0 does (KAFKA-18813) before it hands the request to the
// coordinator, DESCRIBE on every topic named in SubscribedTopicNames: if
// one is denied the heartbeat fails with TOPIC_AUTHORIZATION_FAILED, its
// message naming the denied topics, and the group is left as it was (the
// coordinator never sees the request). A regex matches only the topics
// the member's principal may DESCRIBE, as in Kafka: the coordinator
// records the principal with the member (while the authorizer is on) and
// asks the authorizer for it whenever it resolves the group's
// subscriptions (Reactor.mayDescribeTopic).

import (
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/group"
)

func serveConsumerGroupHeartbeat(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.ConsumerGroupHeartbeatRequest)
	az := r.authorize(c, req)
	fail := func(code int16) {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = code
		respond(resp)
	}
	if !az.group(req.Group, kmsg.ACLOperationRead) {
		fail(errGroupAuth.Code)
		return
	}
	if denied := undescribable(az, req.SubscribedTopicNames); len(denied) > 0 {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = errTopicAuth.Code
		resp.ErrorMessage = kmsg.StringPtr("not authorized to DESCRIBE the subscribed topics: " + strings.Join(denied, ", "))
		respond(resp)
		return
	}
	co, err := r.coordinatorFor(req.Group)
	if err != nil {
		fail(err.Code)
		return
	}
	gc := groupClient(c)
	if r.cfg.Security.enforcing() {
		gc.Principal = principalOf(c)
	}
	co.ConsumerGroupHeartbeat(r.monoNow(), gc, req, func(resp *kmsg.ConsumerGroupHeartbeatResponse) { respond(resp) })
}

// undescribable lists, once each in request order, the subscribed topic
// names the client may not DESCRIBE (each denial audited).
func undescribable(az *authz, names []string) []string {
	var denied []string
	for _, t := range names {
		if !slices.Contains(denied, t) && !az.topic(t, kmsg.ACLOperationDescribe) {
			denied = append(denied, t)
		}
	}
	return denied
}

// consumerTopics lists the topics a consumer group may be assigned,
// sorted by name: every topic but the internal ones, with the racks of
// each partition's replicas (nil when no broker has a rack).
func (r *Reactor) consumerTopics() []group.TopicInfo {
	st := r.ctl.state
	names := make([]string, 0, len(st.Topics))
	for n, t := range st.Topics { //floe:unordered sorted below
		if !t.Internal {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	racked := false
	for _, b := range st.Brokers { //floe:unordered an any-of
		racked = racked || b.Rack != ""
	}
	out := make([]group.TopicInfo, 0, len(names))
	for _, n := range names {
		t := st.Topics[n]
		ti := group.TopicInfo{Name: n, ID: t.ID, Partitions: int32(len(t.Partitions))}
		if racked {
			ti.Racks = make([][]string, len(t.Partitions))
			for i, p := range t.Partitions {
				for _, b := range p.Replicas {
					if br := st.Brokers[b]; br != nil && br.Rack != "" {
						ti.Racks[i] = append(ti.Racks[i], br.Rack)
					}
				}
			}
		}
		out = append(out, ti)
	}
	return out
}
