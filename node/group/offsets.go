package group

// OffsetCommit (key 8), versions 0-8; OffsetFetch (key 9), versions 0-8;
// OffsetDelete (key 47), version 0.
//
// OffsetCommit: a commit from a member must carry the group's generation
// and the member's id (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID v7+); REBALANCE_IN_PROGRESS while the group waits for
// its assignment (the member must rejoin first). A commit with generation
// -1 is a "simple" commit and is accepted only while the group has no
// members (v0 commits are always simple). Commits are allowed during
// PreparingRebalance, so members can commit before they rejoin. Each
// commit is one batch of records, answered once committed (acks=all);
// until then OffsetFetch with requireStable (v7+) reports
// UNSTABLE_OFFSET_COMMIT for its partitions. Metadata over
// OffsetMetadataBytesMax gets OFFSET_METADATA_TOO_LARGE, an unknown
// partition UNKNOWN_TOPIC_OR_PARTITION. v1's per-partition timestamp and
// v2-4's retention time are accepted and not applied.
//
// OffsetFetch: offset -1 for partitions without a commit (including all of
// an unknown group); all committed partitions when topics is null.
//
// OffsetDelete: only for partitions of topics the group is not consuming
// (GROUP_SUBSCRIBED_TO_TOPIC); a non-consumer group with members gets
// NON_EMPTY_GROUP.

import (
	"time"

	"github.com/floe-broker/floe/internal/plant"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit serves an OffsetCommit request; respond is called exactly
// once, after the commit is durable or failed.
func (c *Coordinator) OffsetCommit(now time.Duration, req *kmsg.OffsetCommitRequest, respond func(*kmsg.OffsetCommitResponse)) {
	resp := commitAnswer(req.Version, req.Topics)
	g, err := c.commitGroup(now, req)
	if err == nil && g == nil {
		err = kerr.UnknownServerError
	}
	if err != nil {
		setCommitCodes(resp, err.Code)
		if g := c.groups[req.Group]; g != nil {
			c.dropIfUnused(g)
		}
		respond(resp)
		return
	}
	recs, tps, vals := c.offsetRecords(g, req.Topics, req.Version, resp)
	if len(recs) == 0 {
		c.dropIfUnused(g)
		respond(resp)
		return
	}
	for _, tp := range tps {
		g.pendingCommits[tp]++
	}
	early := plant.Enabled(plant.OffsetCommitBeforeReplicated)
	if early {
		for i, tp := range tps {
			g.offsets[tp] = vals[i]
		}
		respond(resp)
	}
	c.env.Log.Write(recs, func(_ time.Duration, err error) {
		code := storeErrorCode(err, kerr.InvalidCommitOffsetSize)
		for i, tp := range tps {
			if g.pendingCommits[tp]--; g.pendingCommits[tp] <= 0 {
				delete(g.pendingCommits, tp)
			}
			if code == 0 {
				g.offsets[tp] = vals[i]
			}
		}
		if code != 0 {
			if c.groups[g.name] == g {
				c.dropIfUnused(g)
			}
			setUnsetCodes(resp, code)
		}
		if !early {
			respond(resp)
		}
	})
}

// commitGroup checks who may commit, in Kafka's order, and returns the
// group (created for a simple commit to an unknown group).
func (c *Coordinator) commitGroup(now time.Duration, req *kmsg.OffsetCommitRequest) (*group, *kerr.Error) {
	generation, memberID := req.Generation, req.MemberID
	if req.Version == 0 {
		generation, memberID = -1, ""
	}
	var instanceID *string
	if req.Version >= 7 {
		instanceID = req.InstanceID
	}
	g := c.groups[req.Group]
	if g != nil && g.cons != nil {
		return g, consumerCommitCheck(g.cons, memberID, generation, req.Topics)
	}
	if g == nil {
		if generation >= 0 {
			return nil, kerr.IllegalGeneration
		}
		g = newGroup(req.Group)
		g.setState(Empty, c.wallMillis())
		c.groups[req.Group] = g
	}
	if g.isFenced(instanceID, memberID) {
		return nil, kerr.FencedInstanceID
	}
	if generation < 0 && g.state == Empty {
		return g, nil
	}
	m := g.byID[memberID]
	switch {
	case m == nil:
		return nil, kerr.UnknownMemberID
	case generation != g.generation && !plant.Enabled(plant.NoGenerationFence):
		return nil, kerr.IllegalGeneration
	case g.state == CompletingRebalance:
		return nil, kerr.RebalanceInProgress
	}
	c.touch(g, m, now, m.session)
	return g, nil
}

// consumerCommitCheck is commitGroup for a KIP-848 group: the generation
// is the member epoch. A commit without a member (generation < 0) is
// allowed only while the group has no members. An older epoch is
// accepted when the member still holds every partition committed (as
// Kafka 4.3 does, KIP-1251): a member that moved to a new epoch while its
// commit was in flight is not refused for partitions it kept.
func consumerCommitCheck(cg *consumerGroup, memberID string, epoch int32, topics []kmsg.OffsetCommitRequestTopic) *kerr.Error {
	if epoch < 0 && len(cg.Members) == 0 {
		return nil
	}
	m := cg.Members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID
	case epoch == m.Epoch || plant.Enabled(plant.NoGenerationFence):
		return nil
	case m.Classic != nil:
		return kerr.IllegalGeneration // a classic member: its exact generation, as Kafka
	case epoch > m.Epoch || epoch < 0:
		return kerr.StaleMemberEpoch
	}
	for _, rt := range topics {
		for _, rp := range rt.Partitions {
			tp := topicPartition{rt.Topic, rp.Partition}
			if !m.Assigned.has(tp) && !m.Revoking.has(tp) {
				return kerr.StaleMemberEpoch
			}
		}
	}
	return nil
}

// CheckFetchMember validates OffsetFetch v9's member id and epoch against
// a KIP-848 group (0 when fine, or for any other group).
func (c *Coordinator) CheckFetchMember(name string, memberID *string, epoch int32) int16 {
	g := c.groups[name]
	if g == nil || g.cons == nil || memberID == nil {
		return 0
	}
	m := g.cons.Members[*memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case epoch != m.Epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// commitValue checks one partition's commit and makes its stored value.
func (c *Coordinator) commitValue(topic string, rp kmsg.OffsetCommitRequestTopicPartition, version int16, wall int64) (committed, *kerr.Error) {
	md := ""
	if rp.Metadata != nil {
		md = *rp.Metadata
	}
	if len(md) > c.cfg.OffsetMetadataBytesMax {
		return committed{}, kerr.OffsetMetadataTooLarge
	}
	if c.env.Known != nil && !c.env.Known(topic, rp.Partition) {
		return committed{}, kerr.UnknownTopicOrPartition
	}
	v := committed{offset: rp.Offset, leaderEpoch: -1, metadata: md, timestamp: wall}
	if version >= 6 {
		v.leaderEpoch = rp.LeaderEpoch
	}
	return v, nil
}

// commitAnswer is the answer to a commit of topics, every partition's
// code 0 for now. TxnOffsetCommit uses it too (txnAnswer converts it).
func commitAnswer(version int16, topics []kmsg.OffsetCommitRequestTopic) *kmsg.OffsetCommitResponse {
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Version = version
	for _, rt := range topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// offsetRecords are the records a commit of topics writes to group g,
// with their partitions and values; a partition whose offset is refused
// gets its error in resp instead.
func (c *Coordinator) offsetRecords(g *group, topics []kmsg.OffsetCommitRequestTopic, version int16, resp *kmsg.OffsetCommitResponse) ([]Record, []topicPartition, []committed) {
	var recs []Record
	var tps []topicPartition
	var vals []committed
	wall := c.wallMillis()
	for ti, rt := range topics {
		for pi, rp := range rt.Partitions {
			v, e := c.commitValue(rt.Topic, rp, version, wall)
			if e != nil {
				resp.Topics[ti].Partitions[pi].ErrorCode = e.Code
				continue
			}
			tp := topicPartition{rt.Topic, rp.Partition}
			recs = append(recs, Record{Key: offsetKey(g.name, tp), Value: offsetValue(v)})
			tps, vals = append(tps, tp), append(vals, v)
		}
	}
	return recs, tps, vals
}

// setUnsetCodes gives code to every partition of resp without an error.
func setUnsetCodes(resp *kmsg.OffsetCommitResponse, code int16) {
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			if sp := &resp.Topics[ti].Partitions[pi]; sp.ErrorCode == 0 {
				sp.ErrorCode = code
			}
		}
	}
}

func setCommitCodes(resp *kmsg.OffsetCommitResponse, code int16) {
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			resp.Topics[ti].Partitions[pi].ErrorCode = code
		}
	}
}

// FetchOffsets answers one group of an OffsetFetch: the committed offsets
// of the named partitions, or of every committed partition when topics is
// nil. With requireStable a partition whose commit is still being written
// gets UNSTABLE_OFFSET_COMMIT (retriable).
func (c *Coordinator) FetchOffsets(name string, topics []kmsg.OffsetFetchRequestGroupTopic, requireStable bool) kmsg.OffsetFetchResponseGroup {
	out := kmsg.NewOffsetFetchResponseGroup()
	out.Group = name
	g := c.groups[name]
	if topics == nil {
		if g == nil {
			return out
		}
		for _, tp := range g.sortedOffsets() {
			n := len(out.Topics)
			if n == 0 || out.Topics[n-1].Topic != tp.topic {
				t := kmsg.NewOffsetFetchResponseGroupTopic()
				t.Topic = tp.topic
				out.Topics = append(out.Topics, t)
				n++
			}
			out.Topics[n-1].Partitions = append(out.Topics[n-1].Partitions, fetchedOffset(g, tp, requireStable))
		}
		return out
	}
	for _, rt := range topics {
		t := kmsg.NewOffsetFetchResponseGroupTopic()
		t.Topic = rt.Topic
		for _, p := range rt.Partitions {
			t.Partitions = append(t.Partitions, fetchedOffset(g, topicPartition{rt.Topic, p}, requireStable))
		}
		out.Topics = append(out.Topics, t)
	}
	return out
}

func fetchedOffset(g *group, tp topicPartition, requireStable bool) kmsg.OffsetFetchResponseGroupTopicPartition {
	sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
	sp.Partition = tp.partition
	sp.Offset, sp.LeaderEpoch = -1, -1
	empty := ""
	sp.Metadata = &empty
	if g == nil {
		return sp
	}
	if requireStable && g.pendingCommits[tp] > 0 {
		sp.ErrorCode = kerr.UnstableOffsetCommit.Code
		return sp
	}
	if v, ok := g.offsets[tp]; ok {
		md := v.metadata
		sp.Offset, sp.LeaderEpoch, sp.Metadata = v.offset, v.leaderEpoch, &md
	}
	return sp
}

// OffsetDelete serves an OffsetDelete request; respond is called exactly
// once, after the deletions are durable or failed.
func (c *Coordinator) OffsetDelete(now time.Duration, req *kmsg.OffsetDeleteRequest, respond func(*kmsg.OffsetDeleteResponse)) {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	g := c.groups[req.Group]
	switch {
	case req.Group == "":
		resp.ErrorCode = kerr.InvalidGroupID.Code
	case g == nil:
		resp.ErrorCode = kerr.GroupIDNotFound.Code
	case g.state != Empty && g.protocolType != "consumer":
		resp.ErrorCode = kerr.NonEmptyGroup.Code
	}
	if resp.ErrorCode != 0 {
		respond(resp)
		return
	}
	var recs []Record
	var gone []topicPartition
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition = rp.Partition
			tp := topicPartition{rt.Topic, rp.Partition}
			if g.subscribedNow(rt.Topic) {
				sp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			} else if _, ok := g.offsets[tp]; ok {
				recs = append(recs, Record{Key: offsetKey(g.name, tp)})
				gone = append(gone, tp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(recs) == 0 {
		respond(resp)
		return
	}
	c.env.Log.Write(recs, func(_ time.Duration, err error) {
		if code := storeErrorCode(err, kerr.UnknownServerError); code != 0 {
			resp.ErrorCode = code
		} else {
			for _, tp := range gone {
				delete(g.offsets, tp)
			}
		}
		respond(resp)
	})
}

// subscribedNow reports whether the group's members consume topic now
// (OffsetDelete refuses those partitions): for a KIP-848 group, a topic
// its members' subscriptions resolve to.
func (g *group) subscribedNow(topic string) bool {
	if g.cons != nil {
		_, ok := g.cons.Metadata[topic]
		return ok && len(g.cons.Members) > 0
	}
	return g.state != Empty && g.subscribed[topic]
}
