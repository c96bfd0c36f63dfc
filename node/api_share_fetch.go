package node

// ShareFetch (key 78), versions 0-2 (KIP-932, KIP-1206, KIP-1222): a share
// group member's fetch. In order: the share session epoch is checked (0
// opens a session, -1 closes it, otherwise it must be the session's next
// epoch; a mismatch changes nothing), the request's partitions join the
// session and the forgotten ones leave it, piggybacked acknowledgements
// are applied (per partition, all or nothing: INVALID_RECORD_STATE for
// records this member does not hold, INVALID_REQUEST for unknown types or
// malformed batches, in AcknowledgeErrorCode), then records are acquired
// on the session's partitions: up to MaxRecords in all and MaxBytes of
// batches, each lock for share.record.lock.duration.ms. The changed
// share-partition states are written through Raft and the answer waits for
// the commit (shares.go). With nothing acquired and nothing acknowledged
// it waits up to MaxWaitMillis (at most 5 s), looking again every 50 ms.
//
// v2's IsRenewAck (KIP-1222) renews locks and acquires nothing.
// ShareAcquireMode (strict record limit) is honoured by construction: no
// more than MaxRecords records are ever acquired. The group's coordinator
// serves every partition: from its own replica, leader or follower, or,
// holding none, from the partition leader's answer to a remote read made
// before acquiring (prefetch, share_read.go).
//
// Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED at the top
// level), READ on each topic (TOPIC_AUTHORIZATION_FAILED on its
// partitions).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/records"
	"github.com/floe-broker/floe/node/share"
)

const (
	shareFetchMaxWait = 5 * time.Second
	shareFetchRecheck = 50 * time.Millisecond
)

// shareFetch is one ShareFetch being answered.
type shareFetch struct {
	r       *Reactor
	req     *kmsg.ShareFetchRequest
	resp    *kmsg.ShareFetchResponse
	sh      *shareShard
	group   string
	member  string
	via     uint64
	session *shareSession
	// out holds the answer's partitions by key, in the order named.
	out   map[share.Key]*kmsg.ShareFetchResponseTopicPartition
	order []share.Key
	ids   map[string][16]byte
	dirty map[share.Key]bool
	acked bool
	// views are the remote reads of the partitions this broker holds no
	// replica of, for the next acquire (prefetch).
	views map[share.Key]*shareView
}

func serveShareFetch(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.ShareFetchRequest)
	if r.forwardShare(c, derefString(req.GroupID), req, respond) {
		return
	}
	serveShareFetchVia(r, c, req, 0, respond)
}

// serveShareFetchVia serves a ShareFetch as the group's coordinator, on
// the session of the broker via that forwarded it (0: the client's own).
func serveShareFetchVia(r *Reactor, c Client, req *kmsg.ShareFetchRequest, via uint64, respond func(kmsg.Response)) {
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	f := &shareFetch{r: r, req: req, resp: resp, group: derefString(req.GroupID), member: derefString(req.MemberID), via: via,
		out: map[share.Key]*kmsg.ShareFetchResponseTopicPartition{}, ids: map[string][16]byte{}, dirty: map[share.Key]bool{}}
	if code := f.open(c); code != 0 {
		resp.ErrorCode = code
		respond(resp)
		return
	}
	epoch := req.ShareSessionEpoch
	f.applyAcks()
	r.advanceSession(f.sh, f.group, f.member, f.via, epoch, f.session)
	if epoch == -1 || req.IsRenewAck {
		f.finish(respond)
		return
	}
	f.prefetch(func() {
		if r.shares.shards[f.sh.raftGroup] != f.sh {
			f.finish(respond) // the shard moved on while reading: its write fails, nothing is handed out
			return
		}
		f.acquire()
		if len(f.dirty) > 0 || f.acked || req.MaxWaitMillis <= 0 {
			f.finish(respond)
			return
		}
		deadline := r.monoNow() + min(time.Duration(req.MaxWaitMillis)*time.Millisecond, shareFetchMaxWait)
		f.wait(deadline, respond)
	})
}

// prefetch reads, from their leaders, the session's partitions this
// broker holds no replica of (share_read.go), from where each would
// acquire next, and calls then once every answer came or timed out
// (at once, when every partition is local).
func (f *shareFetch) prefetch(then func()) {
	r := f.r
	f.views = nil
	var remote []share.Key
	for _, k := range f.session.parts {
		if _, local := r.byName[topicPartition{k.Topic, k.Partition}]; !local && r.partitionNamed(k.Topic, k.Partition) != nil {
			remote = append(remote, k)
		}
	}
	if len(remote) == 0 {
		then()
		return
	}
	f.views = map[share.Key]*shareView{}
	budget := int(f.req.MaxBytes)
	if budget <= 0 {
		budget = shareReadMaxBytes
	}
	waiting := len(remote) + 1
	answered := func() {
		if waiting--; waiting == 0 {
			then()
		}
	}
	now := r.monoNow()
	for _, k := range remote {
		from := int64(0) // a new share-partition: the leader reads from its log's start
		if sp := f.sh.parts[k]; sp != nil {
			from = sp.NextFrom(now)
		}
		r.shareRead(k.Topic, k.Partition, from, budget, func(v *shareView) {
			if v != nil {
				f.views[k] = v
			}
			answered()
		})
	}
	answered()
}

// view is what k is read from: this broker's replica, or the remote
// read prefetch made (nil: none).
func (f *shareFetch) view(k share.Key) *shareView {
	if dp, ok := f.r.byName[topicPartition{k.Topic, k.Partition}]; ok {
		return localShareView(dp)
	}
	return f.views[k]
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// open checks the group, the member and the session, and resolves the
// request's partitions; it changes nothing but f.
func (f *shareFetch) open(c Client) int16 {
	r, req := f.r, f.req
	az := r.authorize(c, req)
	if !az.group(f.group, kmsg.ACLOperationRead) {
		return errGroupAuth.Code
	}
	sh, err := r.shareShardFor(f.group)
	if err != nil {
		return err.Code
	}
	s, err := sh.useSession(f.group, f.member, f.via, req.ShareSessionEpoch, true)
	if err != nil {
		return err.Code
	}
	f.sh, f.session = sh, s
	for _, rt := range req.Topics {
		t := r.shareTopicByID(rt.TopicID)
		for _, rp := range rt.Partitions {
			code := int16(0)
			switch {
			case t == nil:
				code = kerr.UnknownTopicID.Code
			case !az.topic(t.Name, kmsg.ACLOperationRead):
				code = errTopicAuth.Code
			case rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions):
				code = kerr.UnknownTopicOrPartition.Code
			}
			name := ""
			if t != nil {
				name = t.Name
			}
			sp := f.part(share.Key{Group: f.group, Topic: name, Partition: rp.Partition}, rt.TopicID)
			sp.ErrorCode = code
		}
	}
	return 0
}

// part returns the answer's entry for k, adding it.
func (f *shareFetch) part(k share.Key, id [16]byte) *kmsg.ShareFetchResponseTopicPartition {
	if sp := f.out[k]; sp != nil {
		return sp
	}
	sp := kmsg.NewShareFetchResponseTopicPartition()
	sp.Partition = k.Partition
	sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = -1, -1
	f.out[k], f.ids[k.Topic] = &sp, id
	f.order = append(f.order, k)
	return &sp
}

// applyAcks updates the session's partitions and applies the piggybacked
// acknowledgements.
func (f *shareFetch) applyAcks() {
	r, req := f.r, f.req
	for _, rt := range req.Topics {
		t := r.shareTopicByID(rt.TopicID)
		if t == nil {
			continue
		}
		for _, rp := range rt.Partitions {
			k := share.Key{Group: f.group, Topic: t.Name, Partition: rp.Partition}
			sp := f.out[k]
			if sp.ErrorCode != 0 {
				continue
			}
			f.session.add(k)
			if len(rp.AcknowledgementBatches) == 0 {
				continue
			}
			f.acked = true
			acks := make([]share.Ack, len(rp.AcknowledgementBatches))
			for i, b := range rp.AcknowledgementBatches {
				acks[i] = toAck(b.FirstOffset, b.LastOffset, b.AcknowledgeTypes)
			}
			code, changed := r.shareAcks(f.sh, k, f.member, acks)
			sp.AcknowledgeErrorCode = code
			if changed {
				f.dirty[k] = true
			}
		}
	}
	for _, ft := range req.ForgottenTopicsData {
		if t := r.shareTopicByID(ft.TopicID); t != nil {
			for _, p := range ft.Partitions {
				f.session.remove(share.Key{Group: f.group, Topic: t.Name, Partition: p})
			}
		}
	}
}

func toAck(first, last int64, types []int8) share.Ack {
	a := share.Ack{First: first, Last: last, Types: make([]share.AckType, len(types))}
	for i, t := range types {
		a.Types[i] = share.AckType(t)
	}
	return a
}

// acquire acquires records on the session's partitions.
func (f *shareFetch) acquire() {
	r, req := f.r, f.req
	maxRecords := int(req.MaxRecords)
	if req.Version < 1 || maxRecords <= 0 {
		maxRecords = 500
	}
	budget := int(req.MaxBytes)
	if budget <= 0 {
		budget = 50 << 20
	}
	for _, k := range f.session.parts {
		if maxRecords <= 0 || budget <= 0 {
			return
		}
		t := r.ctl.state.Topics[k.Topic]
		if t == nil {
			continue
		}
		f.acquireOne(t, k, &maxRecords, &budget)
	}
}

// acquireOne acquires records of one partition into the answer.
func (f *shareFetch) acquireOne(t *controller.Topic, k share.Key, maxRecords, budget *int) {
	r := f.r
	v := f.view(k)
	if v == nil && r.partitionNamed(k.Topic, k.Partition) == nil {
		f.part(k, t.ID).ErrorCode = r.missingPartition(k.Topic, k.Partition).Code
		return
	}
	if v == nil || (v.local == nil && v.code != 0) {
		return // not read (its leader did not answer, or could not): nothing this time
	}
	sp, created := r.sharePartition(f.sh, k, v)
	if sp == nil {
		f.part(k, t.ID).ErrorCode = kerr.UnknownTopicOrPartition.Code
		return
	}
	if created {
		f.dirty[k] = true // its start offset is handed out: write it
	}
	now := r.monoNow()
	// Only the leader's start offset is the log's: a follower's local log
	// may start later (a snapshot install), and trimming to it would
	// archive records the log still holds.
	if ls := v.startOffset(); ls > sp.Start() && v.isLeader() {
		sp.Trim(ls)
		f.dirty[k] = true
	}
	from, hw := sp.NextFrom(now), v.highWatermark()
	if r.groupReadCommitted(k.Group) {
		hw = min(hw, v.lastStableOffset())
	}
	if from >= hw || from < v.startOffset() {
		return
	}
	data, err := v.read(from, *budget)
	if err != nil || len(data) == 0 {
		return
	}
	batches, err := records.Split(data)
	if err != nil {
		return
	}
	readEnd := from
	heads := make([]records.Header, 0, len(batches))
	for _, b := range batches {
		h, err := records.ParseHeader(b)
		if err != nil {
			break
		}
		heads = append(heads, h)
		readEnd = min(h.NextOffset(), hw)
	}
	ranges := sp.Acquire(now, f.member, readEnd, *maxRecords)
	if len(ranges) == 0 {
		return
	}
	f.dirty[k] = true
	r.shares.counters.countAcquired(k.Group, ranges)
	out := f.part(k, t.ID)
	for _, rg := range ranges {
		*maxRecords -= int(rg.Last - rg.First + 1)
		out.AcquiredRecords = append(out.AcquiredRecords, kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{
			FirstOffset: rg.First, LastOffset: rg.Last, DeliveryCount: rg.DeliveryCount})
	}
	for i, h := range heads {
		if overlaps(ranges, h.BaseOffset, h.LastOffset()) {
			out.Records = append(out.Records, batches[i]...)
			*budget -= len(batches[i])
		}
	}
}

func overlaps(ranges []share.Range, first, last int64) bool {
	for _, rg := range ranges {
		if rg.First <= last && first <= rg.Last {
			return true
		}
	}
	return false
}

// wait looks for records again every shareFetchRecheck until deadline.
func (f *shareFetch) wait(deadline time.Duration, respond func(kmsg.Response)) {
	r := f.r
	r.after(min(shareFetchRecheck, deadline-r.monoNow()), func() {
		if sh, err := r.shareShardFor(f.group); err != nil || sh != f.sh || sh.groups[f.group] == nil || !sh.groups[f.group].Has(f.member) {
			f.finish(respond) // the coordinator moved: answer what there is (nothing)
			return
		}
		f.prefetch(func() {
			if r.shares.shards[f.sh.raftGroup] != f.sh {
				f.finish(respond)
				return
			}
			f.acquire()
			if len(f.dirty) > 0 || r.monoNow() >= deadline {
				f.finish(respond)
				return
			}
			f.wait(deadline, respond)
		})
	})
}

// finish writes the changed states and answers once they are committed.
func (f *shareFetch) finish(respond func(kmsg.Response)) {
	r := f.r
	keys := sortedShareKeys(f.dirty)
	r.writeShareStates(f.sh, keys, func(err error) {
		f.resp.AcquisitionLockTimeoutMillis = int32(r.groupShareConfig(f.group).Lock.Milliseconds())
		if err != nil {
			// Nothing acquired or acknowledged here is durable: the
			// client must not use it (the shard is reloaded).
			for _, k := range f.order {
				sp := f.out[k]
				sp.AcquiredRecords, sp.Records = nil, nil
				if sp.ErrorCode == 0 {
					sp.ErrorCode = kerr.NotLeaderForPartition.Code
				}
				if f.dirty[k] && sp.AcknowledgeErrorCode == 0 {
					sp.AcknowledgeErrorCode = kerr.NotLeaderForPartition.Code
				}
			}
		}
		f.resp.Topics = nil
		byTopic := map[string]int{}
		for _, k := range f.order {
			i, ok := byTopic[k.Topic]
			if !ok {
				i = len(f.resp.Topics)
				byTopic[k.Topic] = i
				rt := kmsg.NewShareFetchResponseTopic()
				rt.TopicID = f.ids[k.Topic]
				f.resp.Topics = append(f.resp.Topics, rt)
			}
			f.resp.Topics[i].Partitions = append(f.resp.Topics[i].Partitions, *f.out[k])
		}
		respond(f.resp)
		r.pumpDeadLetters(f.sh) // a rejection, or a record at the limit, may owe a dead-letter copy
	})
}
