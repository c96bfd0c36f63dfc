package sim

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/jepsen/history"
	"github.com/floe-broker/floe/netx"
)

// producer is one producing client: it writes unique values with
// acks=all, one operation at a time. An idempotent producer keeps a
// producer id, epoch and per-partition sequence like a real client and
// retries a batch with the same sequence; after an operation whose outcome
// is unknown it starts over with a new producer id (the old sequence may or
// may not have been used) under a new process id.
type producer struct {
	r    *run
	idem bool
	proc int64
	// pid < 0 until InitProducerId answered.
	pid   int64
	epoch int16
	seq   map[int32]int32
}

func (p *producer) start() {
	p.proc, p.pid = p.r.newProc(), -1
	p.r.active++
	p.next()
}

// next schedules the next operation after a think time, or stops.
func (p *producer) next() {
	if p.r.stopping {
		p.r.active--
		return
	}
	p.r.w.After(p.r.think(), p.op)
}

func (p *producer) op() {
	if p.r.stopping {
		p.r.active--
		return
	}
	if p.idem && p.pid < 0 {
		p.initPID()
		return
	}
	part := int32(p.r.rng.Intn(int(p.r.o.Partitions)))
	stamp := producerStamp{pid: -1}
	if p.idem {
		stamp = producerStamp{pid: p.pid, epoch: p.epoch, seq: p.seq[part]}
	}
	n := 1 + p.r.rng.Intn(p.r.o.RecordsMax)
	p.r.produceOp(p.proc, part, n, stamp, func(typ history.Type) {
		if typ == history.OK {
			if p.idem {
				p.seq[part] += int32(n)
			}
		} else {
			p.proc, p.pid = p.r.newProc(), -1
		}
		p.next()
	})
}

// initPID gets a producer id; it is not an operation of the history.
func (p *producer) initPID() {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.ProducerID, req.ProducerEpoch = -1, -1
	req.TransactionTimeoutMillis = 60000
	p.r.kn.call(p.r.meta.anyNode(), req, p.r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			ir := resp.(*kmsg.InitProducerIDResponse)
			if ir.ErrorCode == 0 && ir.ProducerID >= 0 {
				p.pid, p.epoch, p.seq = ir.ProducerID, ir.ProducerEpoch, map[int32]int32{}
			}
		}
		p.next()
	})
}

// produceOp is one produce operation in flight.
type produceOp struct {
	r        *run
	inv      history.Op
	part     int32
	values   []string
	stamp    producerStamp
	codec    int8 // the batch's codec (batch.go), drawn once: a resend is the same batch
	deadline time.Duration
	lastErr  string
	done     func(history.Type)
	// acked, if set, gets the base offset of an acknowledged batch.
	acked func(base int64)
}

// produceOp writes n new unique values to partition part as one batch,
// retrying until it is acknowledged or OpTimeout passes, and records the
// operation. done gets how it ended.
func (r *run) produceOp(proc int64, part int32, n int, stamp producerStamp, done func(history.Type)) {
	r.produceOpAcked(proc, part, n, stamp, done, nil)
}

// produceOpAcked is produceOp that also tells acked the base offset of an
// acknowledged batch.
func (r *run) produceOpAcked(proc int64, part int32, n int, stamp producerStamp, done func(history.Type), acked func(base int64)) *produceOp {
	op := &produceOp{r: r, part: part, stamp: stamp, done: done, acked: acked, deadline: r.now() + r.o.OpTimeout,
		codec: drawCodec(r.rng)}
	recs := make([]history.Record, n)
	for i := range recs {
		r.values++
		v := fmt.Sprintf("%d", r.values)
		op.values = append(op.values, v)
		recs[i] = history.Record{Topic: r.topic, Partition: part, Offset: -1, Value: v}
	}
	op.inv = r.rec.Invoke(history.Op{Process: proc, F: history.Produce, Records: recs, NotIdempotent: stamp.pid < 0})
	r.stats.Produces++
	op.attempt()
	return op
}

func (op *produceOp) attempt() {
	r := op.r
	now := r.now()
	if now >= op.deadline {
		op.finish(history.Info, op.lastErr, 0, 0)
		return
	}
	leader, ok := r.meta.leader(op.part)
	if !ok {
		op.lastErr = "no known leader"
		r.meta.refresh(func() { r.w.After(r.backoff(), op.attempt) })
		return
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = -1
	req.TimeoutMillis = int32((r.o.RequestTimeout * 8 / 10).Milliseconds())
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = r.topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = op.part
	rp.Records = encodeBatchCodec(op.values, nil, r.w.Clock().Now().UnixMilli(), op.stamp, op.codec)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	timeout := min(r.o.RequestTimeout, op.deadline-now)
	r.kn.callAt(leader, req, timeout, r.deposedProbe(leader, r.topic, op.part), func(resp kmsg.Response, err error, _ bool) {
		if err != nil {
			op.retry(err.Error(), err == errConnRefused)
			return
		}
		code, base := produceResult(resp, r.topic, op.part)
		switch {
		case code == 0 && base >= 0:
			op.finish(history.OK, "", leader, base)
		case code == 0:
			op.finish(history.Info, fmt.Sprintf("acknowledged with base offset %d", base), leader, 0)
		case retriable(code):
			op.retry(errName(code), true)
		default:
			// OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH and the
			// like: this batch's fate is unknown to the client.
			op.finish(history.Info, errName(code), leader, 0)
		}
	})
}

func (op *produceOp) retry(why string, refreshMeta bool) {
	op.lastErr = why
	r := op.r
	if refreshMeta {
		r.meta.invalidate(op.part)
	}
	r.w.After(r.backoff(), op.attempt)
}

func (op *produceOp) finish(typ history.Type, why string, from netx.NodeID, base int64) {
	r := op.r
	res := history.Op{Error: why, Node: int32(from)}
	recs := make([]history.Record, len(op.values))
	for i, v := range op.values {
		recs[i] = history.Record{Topic: r.topic, Partition: op.part, Offset: -1, Value: v}
		if typ == history.OK {
			recs[i].Offset = base + int64(i)
		}
	}
	res.Records = recs
	r.rec.Complete(op.inv, typ, res)
	if typ == history.OK {
		r.stats.Acked++
		r.sawOffset(op.part, base+int64(len(op.values)))
		if op.acked != nil {
			op.acked(base)
		}
	}
	op.done(typ)
}

// produceResult is the error code and base offset a Produce response gives
// topic's partition part: UNKNOWN_SERVER_ERROR and -1 when it does not
// answer for it (the last answer wins if it answers twice).
func produceResult(resp kmsg.Response, topic string, part int32) (code int16, base int64) {
	code, base = kerr.UnknownServerError.Code, -1
	for _, t := range resp.(*kmsg.ProduceResponse).Topics {
		for _, rp := range t.Partitions {
			if t.Topic == topic && rp.Partition == part {
				code, base = rp.ErrorCode, rp.BaseOffset
			}
		}
	}
	return code, base
}
