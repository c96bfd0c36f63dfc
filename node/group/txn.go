package group

// TxnOffsetCommit (key 28): offsets sent to a transaction. They are written
// to __consumer_offsets as a transactional batch of the producer (so the
// partition's producer table fences a zombie: PRODUCER_FENCED) and held
// pending — invisible to OffsetFetch, which reports UNSTABLE_OFFSET_COMMIT
// for them under requireStable — until the transaction's marker on this
// partition: CompleteTxn makes them the committed offsets (commit) or
// drops them (abort). Replay does the same from the log: ReplayTxn buffers
// a producer's transactional records and ReplayMarker applies or drops
// them, so pending offsets survive a coordinator move.
//
// v3+ (KIP-447) carries the member id and generation, checked as
// OffsetCommit checks them; v0-2 commits are not checked against the
// group's membership.

import (
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnLog writes a producer's transactional batch to the coordinator's
// partition.
//
// Contract: as Log.Write, with the batch marked transactional and carrying
// producer pid at epoch (no sequence); a fenced epoch fails with
// INVALID_PRODUCER_EPOCH.
type TxnLog interface {
	WriteTxn(pid int64, epoch int16, recs []Record, done func(now time.Duration, err error))
}

// txnOffsets are one producer's pending transactional offsets, by group.
type txnOffsets map[string]map[topicPartition]committed

// TxnOffsetCommit serves a TxnOffsetCommit request; respond is called
// exactly once, after the write is durable or failed.
func (c *Coordinator) TxnOffsetCommit(now time.Duration, req *kmsg.TxnOffsetCommitRequest, respond func(*kmsg.TxnOffsetCommitResponse)) {
	topics := commitTopics(req.Topics)
	resp := commitAnswer(6, topics)
	answer := func() { respond(txnAnswer(req, resp)) }
	if c.env.TxnLog == nil {
		setUnsetCodes(resp, kerr.CoordinatorNotAvailable.Code)
		answer()
		return
	}
	g, err := c.txnCommitGroup(now, req)
	if err != nil {
		setUnsetCodes(resp, err.Code)
		answer()
		return
	}
	recs, tps, vals := c.offsetRecords(g, topics, 6, resp)
	if len(recs) == 0 {
		answer()
		return
	}
	pid := req.ProducerID
	c.env.TxnLog.WriteTxn(pid, req.ProducerEpoch, recs, func(_ time.Duration, err error) {
		if err != nil {
			code := storeErrorCode(err, kerr.InvalidCommitOffsetSize)
			if code == kerr.InvalidProducerEpoch.Code {
				code = kerr.ProducerFenced.Code
			}
			setUnsetCodes(resp, code)
			answer()
			return
		}
		for i, tp := range tps {
			c.holdTxnOffset(pid, g.name, tp, vals[i])
		}
		answer()
	})
}

// commitTopics are a TxnOffsetCommit's topics as OffsetCommit (v6) would
// carry them, so that both are checked and written by the same code.
func commitTopics(topics []kmsg.TxnOffsetCommitRequestTopic) []kmsg.OffsetCommitRequestTopic {
	out := make([]kmsg.OffsetCommitRequestTopic, len(topics))
	for i, rt := range topics {
		out[i].Topic = rt.Topic
		for _, rp := range rt.Partitions {
			out[i].Partitions = append(out[i].Partitions, kmsg.OffsetCommitRequestTopicPartition{
				Partition: rp.Partition, Offset: rp.Offset, LeaderEpoch: rp.LeaderEpoch, Metadata: rp.Metadata})
		}
	}
	return out
}

// txnAnswer is the TxnOffsetCommit answer holding the codes of resp
// (commitAnswer's shape).
func txnAnswer(req *kmsg.TxnOffsetCommitRequest, resp *kmsg.OffsetCommitResponse) *kmsg.TxnOffsetCommitResponse {
	return TxnOffsetCommitAnswer(req, func(ti, pi int) int16 { return resp.Topics[ti].Partitions[pi].ErrorCode })
}

// TxnOffsetCommitAnswer is the answer to req with code(ti, pi) for the
// pi-th partition of its ti-th topic.
func TxnOffsetCommitAnswer(req *kmsg.TxnOffsetCommitRequest, code func(ti, pi int) int16) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for ti, rt := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for pi, rp := range rt.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code(ti, pi)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// txnCommitGroup checks the committer as OffsetCommit would (v3+), and
// returns the group, created if unknown.
func (c *Coordinator) txnCommitGroup(now time.Duration, req *kmsg.TxnOffsetCommitRequest) (*group, *kerr.Error) {
	if req.Version < 3 || req.Generation < 0 {
		g := c.groups[req.Group]
		if g == nil {
			g = newGroup(req.Group)
			g.setState(Empty, c.wallMillis())
			c.groups[req.Group] = g
		}
		return g, nil
	}
	return c.commitGroup(now, &kmsg.OffsetCommitRequest{
		Version: 7, Group: req.Group, Generation: req.Generation, MemberID: req.MemberID, InstanceID: req.InstanceID,
	})
}

// holdTxnOffset records a durable transactional offset of producer pid,
// pending until its marker. While pending, requireStable fetches of the
// partition get UNSTABLE_OFFSET_COMMIT.
func (c *Coordinator) holdTxnOffset(pid int64, groupName string, tp topicPartition, v committed) {
	if c.txnPending == nil {
		c.txnPending = map[int64]txnOffsets{}
	}
	to := c.txnPending[pid]
	if to == nil {
		to = txnOffsets{}
		c.txnPending[pid] = to
	}
	byTP := to[groupName]
	if byTP == nil {
		byTP = map[topicPartition]committed{}
		to[groupName] = byTP
	}
	g := c.groups[groupName]
	if g == nil {
		g = newGroup(groupName)
		c.groups[groupName] = g
	}
	if _, dup := byTP[tp]; !dup {
		g.pendingCommits[tp]++
	}
	byTP[tp] = v
}

// CompleteTxn applies the marker of producer pid's transaction on this
// partition: commit makes its pending offsets committed, abort drops them.
// A marker for a producer with nothing pending changes nothing.
func (c *Coordinator) CompleteTxn(pid int64, commit bool) {
	to := c.txnPending[pid]
	if to == nil {
		return
	}
	delete(c.txnPending, pid)
	names := make([]string, 0, len(to))
	for n := range to { //floe:unordered sorted below
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g := c.groups[n]
		if g == nil {
			continue
		}
		for tp, v := range to[n] { //floe:unordered each entry is applied independently
			if g.pendingCommits[tp]--; g.pendingCommits[tp] <= 0 {
				delete(g.pendingCommits, tp)
			}
			if commit {
				g.offsets[tp] = v
			}
		}
		c.dropIfUnused(g)
	}
}

// ReplayTxn applies one record of a transactional batch of producer pid
// during replay: it is pending until ReplayMarker.
func (c *Coordinator) ReplayTxn(pid int64, key, value []byte) error {
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(key); err != nil || k.Version > 1 || value == nil {
		return ErrUnknownRecord
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(value); err != nil {
		return err
	}
	epoch := v.LeaderEpoch
	if v.Version < 3 {
		epoch = -1
	}
	c.holdTxnOffset(pid, k.Group, topicPartition{k.Topic, k.Partition},
		committed{offset: v.Offset, leaderEpoch: epoch, metadata: v.Metadata, timestamp: v.CommitTimestamp})
	return nil
}

// ReplayMarker applies a transaction marker of producer pid during replay.
func (c *Coordinator) ReplayMarker(pid int64, commit bool) { c.CompleteTxn(pid, commit) }

// PendingTxnOffsets returns how many producers have transactional offsets
// pending here.
func (c *Coordinator) PendingTxnOffsets() int { return len(c.txnPending) }
