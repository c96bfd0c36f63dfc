package node

// DeleteRecords (key 21), versions 0-2.
//
// Moves a partition's log start offset forward: records before Offset are
// no longer readable (fetching them is OFFSET_OUT_OF_RANGE) and go for good
// with the segments that hold them at the next retention pass. Offset -1
// means the high watermark; an offset past the high watermark, or any other
// negative one, is OFFSET_OUT_OF_RANGE. Only the partition's leader answers
// (NOT_LEADER_FOR_PARTITION elsewhere, and until it has committed an entry
// of its own term, so its high watermark is current); it replicates the new
// start through the partition's Raft log and answers once that entry is
// committed and applied, with the new low watermark, or REQUEST_TIMED_OUT
// after the request's timeout (the move may still happen). An offset at or
// below the current start changes nothing and is answered at once with the
// current start. The versions differ only in encoding (v2 flexible).
//
// Authorization: DELETE on each topic (TOPIC_AUTHORIZATION_FAILED on its
// partitions). Internal topics (__consumer_offsets, __audit_log) are
// refused for everyone with INVALID_TOPIC_EXCEPTION, as Kafka refuses
// them: deleting the start of the audit log would cut its chain unseen.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// deleteRecordsTimeoutDefault applies when a client sends no timeout.
const deleteRecordsTimeoutDefault = 30 * time.Second

func serveDeleteRecords(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	denied := deniedTopics(r.authorize(c, req), req.Topics, func(t kmsg.DeleteRecordsRequestTopic) string { return t.Topic }, kmsg.ACLOperationDelete)
	answered := false
	g := newGather(func() {
		if !answered {
			answered = true
			respond(resp)
		}
	})
	var waiting []*kmsg.DeleteRecordsResponseTopicPartition
	resp.Topics = make([]kmsg.DeleteRecordsResponseTopic, len(req.Topics))
	for ti, rt := range req.Topics {
		st := &resp.Topics[ti]
		*st = kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.DeleteRecordsResponseTopicPartition, len(rt.Partitions))
		for pi, rp := range rt.Partitions {
			sp := &st.Partitions[pi]
			*sp = kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			if denied[rt.Topic] {
				sp.ErrorCode = errTopicAuth.Code
				continue
			}
			if t := r.ctl.state.Topics[rt.Topic]; t != nil && t.Internal {
				sp.ErrorCode = kerr.InvalidTopicException.Code
				continue
			}
			if r.deleteRecords(rt.Topic, rp, sp, g, &answered) {
				waiting = append(waiting, sp)
			}
		}
	}
	if len(waiting) > 0 {
		timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
		if timeout <= 0 {
			timeout = deleteRecordsTimeoutDefault
		}
		r.after(timeout, func() { // before the request's deadline (deadline.go)
			if answered {
				return
			}
			for _, sp := range waiting {
				if sp.LowWatermark == -1 && sp.ErrorCode == 0 {
					sp.ErrorCode = kerr.RequestTimedOut.Code
				}
			}
			answered = true
			respond(resp)
		})
	}
	g.done()
}

// deleteRecords handles one partition. It reports whether the answer waits
// for a commit (one part of g then finishes when it does).
func (r *Reactor) deleteRecords(topic string, rp kmsg.DeleteRecordsRequestTopicPartition, sp *kmsg.DeleteRecordsResponseTopicPartition, g *gather, answered *bool) bool {
	p, ok := r.byName[topicPartition{topic, rp.Partition}]
	if !ok {
		sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		if r.partitionExists(topic, rp.Partition) {
			sp.ErrorCode = kerr.NotLeaderForPartition.Code
		}
		return false
	}
	if !p.Ready() {
		sp.ErrorCode = kerr.NotLeaderForPartition.Code
		return false
	}
	hw, start := p.HighWatermark(), p.StartOffset()
	off := rp.Offset
	if off == -1 {
		off = hw
	}
	switch {
	case off < 0 || off > hw:
		sp.ErrorCode = kerr.OffsetOutOfRange.Code
		return false
	case off <= start:
		sp.LowWatermark = start
		return false
	}
	index, term, err := p.ProposeStartOffset(off)
	if err != nil {
		sp.ErrorCode = errCode(err)
		return false
	}
	g.add()
	p.WaitCommit(index, term, -1, func(err error) {
		if *answered {
			return
		}
		if err != nil {
			sp.ErrorCode = errCode(err)
		} else {
			sp.LowWatermark = p.StartOffset()
		}
		g.done()
	})
	return true
}
