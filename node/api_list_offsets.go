package node

// ListOffsets (key 2), versions 1-10.
//
// v1 is the first version with a single offset per partition (librdkafka
// needs it); v4+ checks CurrentLeaderEpoch and returns the leader epoch.
// The special timestamps, as Kafka defines them:
//   - -1 (latest): the high watermark, the next offset a consumer will see
//     (under isolation level 1, read_committed, the last stable offset);
//   - -2 (earliest): the log start offset;
//   - -3 (max timestamp, v7+, KIP-734): the committed record with the
//     largest timestamp, the first of several that share it, with that
//     timestamp (-1, -1 when there is no record);
//   - -4 (earliest local, v8+, KIP-405): the log start offset, since every
//     record of a Floe log is local;
//   - -5 (latest tiered, v9+, KIP-1005): -1 with timestamp -1, Kafka's answer
//     when there is no tiered storage.
//
// Any other value asks for the first committed offset whose record timestamp
// is at or after it (-1 offset when there is none). v10 adds a timeout,
// which needs no wait here: every answer is immediate. Only the leader
// answers, once it has committed an entry of its own term.
//
// Authorization: DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED on its
// partitions).

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/partition"
	"github.com/floe-broker/floe/node/records"
)

func serveListOffsets(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	denied := deniedTopics(r.authorize(c, req), req.Topics, func(t kmsg.ListOffsetsRequestTopic) string { return t.Topic }, kmsg.ACLOperationDescribe)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			st.Partitions = append(st.Partitions, r.listOffset(rt.Topic, rp, denied[rt.Topic], req.IsolationLevel))
		}
		resp.Topics = append(resp.Topics, st)
	}
	respond(resp)
}

// listOffset answers one partition (TOPIC_AUTHORIZATION_FAILED when its
// topic is denied).
func (r *Reactor) listOffset(topic string, rp kmsg.ListOffsetsRequestTopicPartition, denied bool, isolation int8) kmsg.ListOffsetsResponseTopicPartition {
	sp := kmsg.NewListOffsetsResponseTopicPartition()
	sp.Partition = rp.Partition
	sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
	if denied {
		sp.ErrorCode = errTopicAuth.Code
		return sp
	}
	if r.buggify(bugListOffsetsNotLeader) {
		sp.ErrorCode = kerr.NotLeaderForPartition.Code
		return sp
	}
	p, code := r.readLeader(topic, rp.Partition, rp.CurrentLeaderEpoch)
	if p == nil {
		sp.ErrorCode = code
		return sp
	}
	sp.LeaderEpoch = int32(p.Term())
	switch rp.Timestamp {
	case listOffsetsEarliest, listOffsetsEarliestLocal:
		sp.Offset = p.StartOffset()
	case listOffsetsLatest:
		sp.Offset = p.HighWatermark()
		if isolation == 1 {
			sp.Offset = p.LastStableOffset() // read_committed: the last stable offset
		}
	case listOffsetsMaxTimestamp:
		sp.Offset, sp.Timestamp = p.MaxTimestamp()
	case listOffsetsLatestTiered:
		sp.Offset = -1
	default:
		sp.Offset, sp.Timestamp = offsetForTime(p, rp.Timestamp)
	}
	return sp
}

// The special timestamps of ListOffsets.
const (
	listOffsetsLatest        = -1
	listOffsetsEarliest      = -2
	listOffsetsMaxTimestamp  = -3
	listOffsetsEarliestLocal = -4
	listOffsetsLatestTiered  = -5
)

// offsetForTime finds the first committed record with a timestamp at or
// after ts. The log's time index finds the first batch whose max timestamp
// qualifies; the records inside it say which one is first.
func offsetForTime(p *partition.Partition, ts int64) (offset, timestamp int64) {
	off := p.OffsetForTime(ts)
	if off < 0 {
		return -1, -1
	}
	data, err := p.Read(off, 1)
	if err != nil || len(data) == 0 {
		return -1, -1
	}
	batches, err := records.Split(data)
	if err != nil {
		return -1, -1
	}
	for _, b := range batches {
		h, err := records.ParseHeader(b)
		if err != nil {
			return -1, -1
		}
		found, foundTS := int64(-1), int64(-1)
		_ = records.Records(b, func(rec records.Record) error {
			o := h.BaseOffset + int64(rec.OffsetDelta)
			t := h.BaseTimestamp + rec.TimestampDelta
			if h.HasLogAppendTime() {
				t = h.MaxTimestamp
			}
			if o >= off && t >= ts {
				found, foundTS = o, t
				return errStop
			}
			return nil
		})
		if found >= 0 && found < p.HighWatermark() {
			return found, foundTS
		}
	}
	return -1, -1
}

// errStop ends a record walk early.
var errStop = errors.New("stop")
