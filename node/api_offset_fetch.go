package node

// OffsetFetch (key 9), versions 0-8.
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

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(9, 0, 8, serveOffsetFetch) }

func serveOffsetFetch(r *Reactor, _ Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			resp.Groups = append(resp.Groups, r.fetchGroupOffsets(rg.Group, rg.Topics, req.RequireStable))
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
	g := r.fetchGroupOffsets(req.Group, topics, req.RequireStable)
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
func (r *Reactor) fetchGroupOffsets(name string, topics []kmsg.OffsetFetchRequestGroupTopic, requireStable bool) kmsg.OffsetFetchResponseGroup {
	co, err := r.coordinatorFor(name)
	if err == nil {
		return co.FetchOffsets(name, topics, requireStable)
	}
	g := kmsg.NewOffsetFetchResponseGroup()
	g.Group, g.ErrorCode = name, err.Code
	for _, rt := range topics {
		t := kmsg.NewOffsetFetchResponseGroupTopic()
		t.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			sp.Partition, sp.Offset, sp.LeaderEpoch, sp.ErrorCode = p, -1, -1, err.Code
			t.Partitions = append(t.Partitions, sp)
		}
		g.Topics = append(g.Topics, t)
	}
	return g
}
