package sim

import (
	"math/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/jepsen/history"
)

// pipeProducerRun is a pipelined producer with one partition on a run with
// only what answered needs; its batches are made but not sent.
func pipeProducerRun() (*run, *pipeProducer, *pipePart) {
	r, _ := pipeConnRun()
	r.o.Partitions, r.o.RecordsMax, r.o.OpTimeout = 1, 1, time.Minute
	r.rng = rand.New(rand.NewSource(1))
	r.topic = "sim"
	r.topOffset = map[int32]int64{}
	r.rec = history.NewRecorder(nil, func() int64 { return int64(r.w.Clock().Monotonic()) })
	pp := &pipePart{part: 0, ackedTo: -1}
	p := &pipeProducer{r: r, pid: 7, parts: []*pipePart{pp}}
	return r, p, pp
}

// produceAnswer is a produce response for partition 0 of topic.
func produceAnswer(topic string, code int16, base int64) kmsg.Response {
	resp := kmsg.NewPtrProduceResponse()
	rt := kmsg.NewProduceResponseTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceResponseTopicPartition()
	rp.ErrorCode, rp.BaseOffset = code, base
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	return resp
}

// TestPipeWindowHoldsABatchAckedBehindAFailedOne: a batch acknowledged
// while the one before it timed out stays in the window until that one is
// acknowledged, so no sixth batch is made: the broker remembers the last
// five batches of a producer, and a resend of the timed-out batch must
// still be among them (sim seed 1740374: the window let a sixth batch out,
// and the broker refused the resend OUT_OF_ORDER_SEQUENCE_NUMBER).
func TestPipeWindowHoldsABatchAckedBehindAFailedOne(t *testing.T) {
	r, p, pp := pipeProducerRun()
	for range pipeMaxInFlight {
		p.newBatch(pp)
	}
	bs := append([]*pipeBatch(nil), pp.win...)
	for _, b := range bs {
		b.onWire, b.sent = true, true
	}
	p.answered(pp, bs[0], 1, produceAnswer(r.topic, kerr.RequestTimedOut.Code, -1), nil)
	p.answered(pp, bs[1], 1, produceAnswer(r.topic, 0, 11), nil)
	if pp.room() || len(pp.win) != pipeMaxInFlight || pp.ackedTo != -1 {
		t.Fatalf("after batch 1 acknowledged behind failed batch 0: room %v, window %d, acked to %d; want no room, %d batches, -1",
			pp.room(), len(pp.win), pp.ackedTo, pipeMaxInFlight)
	}
	// The resend of batch 0 is acknowledged: 0 and 1 leave the window.
	bs[0].onWire = true
	p.answered(pp, bs[0], 1, produceAnswer(r.topic, 0, 10), nil)
	if !pp.room() || len(pp.win) != pipeMaxInFlight-2 || pp.win[0] != bs[2] || pp.ackedTo != bs[2].seq {
		t.Fatalf("after batch 0 acknowledged: room %v, window %d, acked to %d; want room, %d batches from batch 2, %d",
			pp.room(), len(pp.win), pp.ackedTo, pipeMaxInFlight-2, bs[2].seq)
	}
	// A start-over ends batches 2 to 4 indeterminate, not 1 again.
	p.startOver("test")
	if p.acked != 2 || len(r.violations) != 0 {
		t.Fatalf("acknowledged %d, violations %v; want 2, none", p.acked, r.violations)
	}
}
