package node

// OffsetFetch (key 9), versions 0-9. v9 (KIP-848) adds a member id and
// epoch per group: for a consumer group they must be a member's current
// ones (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH as the group error).
//
// Each group is answered by its coordinator (group/offsets.go): offset -1
// where nothing is committed; all committed partitions when topics is null
// (v2+); UNSTABLE_OFFSET_COMMIT for a partition whose commit is still being
// written when requireStable is set (v7+). v8 batches groups, each with its
// own error (NOT_COORDINATOR for groups coordinated elsewhere); v0-7 ask
// for one group: its error is the top-level error (v2+) and is also set on
// every requested partition (v0-1 have no top-level error). v0 is served
// like v1 (Kafka read v0 from ZooKeeper; Floe has one store). librdkafka
// needs v1 advertised.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/group"
)

// Authorization: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED, set as
// a coordinator error is), then DESCRIBE on each topic named
// (TOPIC_AUTHORIZATION_FAILED on its partitions); when every committed
// topic is asked for (null), those the client may not DESCRIBE are left
// out.
func serveOffsetFetch(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	az := r.authorize(c, req)
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			if code := r.checkFetchMember(rg); code != 0 && az.group(rg.Group, kmsg.ACLOperationDescribe) {
				g := kmsg.NewOffsetFetchResponseGroup()
				g.Group, g.ErrorCode = rg.Group, code
				resp.Groups = append(resp.Groups, g)
				continue
			}
			resp.Groups = append(resp.Groups, r.fetchGroupOffsets(az, rg.Group, rg.Topics, req.RequireStable))
		}
		respond(resp)
		return
	}
	var topics []kmsg.OffsetFetchRequestGroupTopic
	if req.Topics != nil || req.Version < 2 {
		topics = make([]kmsg.OffsetFetchRequestGroupTopic, 0, len(req.Topics))
		for _, rt := range req.Topics {
			t := kmsg.NewOffsetFetchRequestGroupTopic()
			t.Topic, t.Partitions = rt.Topic, rt.Partitions
			topics = append(topics, t)
		}
	}
	g := r.fetchGroupOffsets(az, req.Group, topics, req.RequireStable)
	resp.ErrorCode = g.ErrorCode
	for _, gt := range g.Topics {
		st := kmsg.NewOffsetFetchResponseTopic()
		st.Topic = gt.Topic
		for _, gp := range gt.Partitions {
			sp := kmsg.NewOffsetFetchResponseTopicPartition()
			sp.Partition, sp.Offset, sp.LeaderEpoch = gp.Partition, gp.Offset, gp.LeaderEpoch
			sp.Metadata, sp.ErrorCode = gp.Metadata, gp.ErrorCode
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	respond(resp)
}

// fetchGroupOffsets answers one group, or its coordinator error on the
// group and every requested partition.
func (r *Reactor) fetchGroupOffsets(az *authz, name string, topics []kmsg.OffsetFetchRequestGroupTopic, requireStable bool) kmsg.OffsetFetchResponseGroup {
	co, err := r.coordinatorFor(name)
	if !az.group(name, kmsg.ACLOperationDescribe) {
		co, err = nil, errGroupAuth
	}
	if err == nil {
		return fetchAuthorizedOffsets(az, co, name, topics, requireStable)
	}
	g := kmsg.NewOffsetFetchResponseGroup()
	g.Group, g.ErrorCode = name, err.Code
	for _, rt := range topics {
		g.Topics = append(g.Topics, offsetFetchFailed(rt, err.Code))
	}
	return g
}

// offsetFetchFailed answers every partition of a requested topic with code.
func offsetFetchFailed(rt kmsg.OffsetFetchRequestGroupTopic, code int16) kmsg.OffsetFetchResponseGroupTopic {
	t := kmsg.NewOffsetFetchResponseGroupTopic()
	t.Topic = rt.Topic
	for _, p := range rt.Partitions {
		sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		sp.Partition, sp.Offset, sp.LeaderEpoch, sp.ErrorCode = p, -1, -1, code
		t.Partitions = append(t.Partitions, sp)
	}
	return t
}

// fetchAuthorizedOffsets answers from the coordinator for the topics the
// client may DESCRIBE: the others named get TOPIC_AUTHORIZATION_FAILED,
// and, when topics is null, are left out.
func fetchAuthorizedOffsets(az *authz, co *group.Coordinator, name string, topics []kmsg.OffsetFetchRequestGroupTopic, requireStable bool) kmsg.OffsetFetchResponseGroup {
	if topics == nil {
		g := co.FetchOffsets(name, nil, requireStable)
		kept := g.Topics[:0]
		for _, t := range g.Topics {
			if az.sees(kmsg.ACLResourceTypeTopic, t.Topic, kmsg.ACLOperationDescribe) {
				kept = append(kept, t)
			}
		}
		g.Topics = kept
		return g
	}
	denied := deniedTopics(az, topics, func(t kmsg.OffsetFetchRequestGroupTopic) string { return t.Topic }, kmsg.ACLOperationDescribe)
	if len(denied) == 0 {
		return co.FetchOffsets(name, topics, requireStable)
	}
	allowed := make([]kmsg.OffsetFetchRequestGroupTopic, 0, len(topics))
	var refused []kmsg.OffsetFetchResponseGroupTopic
	for _, rt := range topics {
		if !denied[rt.Topic] {
			allowed = append(allowed, rt)
			continue
		}
		refused = append(refused, offsetFetchFailed(rt, errTopicAuth.Code))
	}
	g := co.FetchOffsets(name, allowed, requireStable)
	g.Topics = append(g.Topics, refused...)
	return g
}

// checkFetchMember checks v9's member id and epoch (0 when fine or when
// the coordinator is not here: fetchGroupOffsets reports that).
func (r *Reactor) checkFetchMember(rg kmsg.OffsetFetchRequestGroup) int16 {
	if rg.MemberID == nil {
		return 0
	}
	co, err := r.coordinatorFor(rg.Group)
	if err != nil {
		return 0
	}
	return co.CheckFetchMember(rg.Group, rg.MemberID, rg.MemberEpoch)
}
