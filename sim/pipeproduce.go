package sim

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/jepsen/history"
	"github.com/floe-broker/floe/netx"
)

// pipeProducer is an idempotent producer as franz-go runs one: per
// partition up to pipeMaxInFlight batches in flight at once, with
// consecutive sequences, on its kept connection to the partition's leader
// (pipeconn.go). It learns leaders from its own Metadata calls (its own
// metaCache, stale in its own way), refreshed on NOT_LEADER_OR_FOLLOWER,
// UNKNOWN_TOPIC_OR_PARTITION and a lost connection.
//
// Every batch is an operation of the history (a process of its own: a
// process runs one operation at a time), so the lost-write and duplicate
// checkers judge it. On a retriable error a partition stops sending, lets
// every batch on the wire come back, and resends the failed batch and
// those after it, in order, with their sequences; an
// OUT_OF_ORDER_SEQUENCE_NUMBER behind a failed batch is retriable too. An
// unknown outcome (a connection lost with batches pending, an operation
// past OpTimeout) or any other error starts over as the one-at-a-time
// producer does: every batch not acknowledged ends indeterminate and a
// new producer id is fetched.
type pipeProducer struct {
	r     *run
	meta  *metaCache
	conns map[netx.NodeID]*pipeConn
	pid   int64 // < 0 until InitProducerId answered
	epoch int16
	gen   int // bumped on each start-over: answers to older batches are ignored
	parts []*pipePart
	done  bool
	// For the run's note.
	batches, acked, resent, overs int
}

type pipePart struct {
	part int32
	seq  int32
	// win: the batches from the oldest not yet acknowledged on, in
	// sequence order; those on the wire come first, to node. A batch
	// acknowledged while an earlier one is not (the earlier one timed out
	// and is to be resent) stays in it, acked, until the earlier ones are
	// acknowledged: the window is the span of sequences the broker must
	// still remember, and the broker remembers only the last
	// pipeMaxInFlight batches (Kafka's 5). A window that forgot the acked
	// batch would let a sixth batch out, and the broker, which remembers
	// only the five after the one to resend, refuse that resend
	// OUT_OF_ORDER_SEQUENCE_NUMBER (sim seed 1740374).
	win  []*pipeBatch
	node netx.NodeID
	// failed: a batch of this round failed; send nothing until every
	// batch on the wire is back, then resend from the first failed one.
	failed bool
	// waiting: a resend or a metadata refresh is scheduled.
	waiting bool
	// ackedTo is the sequence after the acknowledged prefix of this
	// producer id's batches (-1: none acknowledged yet).
	ackedTo int32
}

type pipeBatch struct {
	inv      history.Op
	values   []string
	codec    int8 // drawn once (batch.go): a resend is the same batch
	seq      int32
	gen      int
	deadline time.Duration
	onWire   bool
	sent     bool
	acked    bool // acknowledged, held in the window behind an earlier batch
	lastErr  string
}

func (r *run) startPipeProducer() {
	p := &pipeProducer{r: r, meta: newMetaCache(r), conns: map[netx.NodeID]*pipeConn{}, pid: -1}
	for i := int32(0); i < r.o.Partitions; i++ {
		p.parts = append(p.parts, &pipePart{part: i, ackedTo: -1})
	}
	r.active++
	r.w.After(r.think(), p.tick)
}

func (p *pipeProducer) busy() bool {
	for _, pp := range p.parts {
		if len(pp.win) > 0 {
			return true
		}
	}
	return false
}

// stopIfDone ends the producer once the run stops and nothing is left.
func (p *pipeProducer) stopIfDone() bool {
	if p.done {
		return true
	}
	if p.r.stopping && !p.busy() {
		p.done = true
		p.r.active--
		p.r.note(fmt.Sprintf("pipelined producer: %d batches, %d acknowledged, %d resent behind a failed one, %d start-overs",
			p.batches, p.acked, p.resent, p.overs))
		return true
	}
	return false
}

// tick makes a burst of new batches, then waits a few think times.
func (p *pipeProducer) tick() {
	r := p.r
	if p.stopIfDone() {
		return
	}
	if r.stopping { // the batches left end by themselves; look again later
		r.w.After(50*time.Millisecond, p.tick)
		return
	}
	if p.pid < 0 {
		p.initPID()
		return
	}
	// A burst of batches, each to a random partition (partitions with
	// one leader share its connection, so their answers interleave).
	burst := 1 + r.rng.Intn(pipeMaxInFlight)
	for range burst {
		if pp := p.parts[r.rng.Intn(len(p.parts))]; pp.room() {
			p.newBatch(pp)
		}
	}
	for _, pp := range p.parts {
		p.flush(pp)
	}
	r.w.After(3*r.think(), p.tick) // bursts, a few times less often than a one-at-a-time producer's operations
}

func (p *pipeProducer) initPID() {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.ProducerID, req.ProducerEpoch = -1, -1
	req.TransactionTimeoutMillis = 60000
	p.r.kn.call(p.meta.anyNode(), req, p.r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		if err == nil {
			ir := resp.(*kmsg.InitProducerIDResponse)
			if ir.ErrorCode == 0 && ir.ProducerID >= 0 {
				p.pid, p.epoch = ir.ProducerID, ir.ProducerEpoch
			}
		}
		p.r.w.After(p.r.think(), p.tick)
	})
}

// room reports whether pp may make a new batch: fewer than
// pipeMaxInFlight batches from the oldest unacknowledged one on.
func (pp *pipePart) room() bool { return len(pp.win) < pipeMaxInFlight }

func (p *pipeProducer) newBatch(pp *pipePart) {
	r := p.r
	n := 1 + r.rng.Intn(r.o.RecordsMax)
	b := &pipeBatch{seq: pp.seq, gen: p.gen, deadline: r.now() + r.o.OpTimeout, codec: drawCodec(r.rng)}
	pp.seq += int32(n)
	recs := make([]history.Record, n)
	for i := range recs {
		r.values++
		v := fmt.Sprintf("%d", r.values)
		b.values = append(b.values, v)
		recs[i] = history.Record{Topic: r.topic, Partition: pp.part, Offset: -1, Value: v}
	}
	b.inv = r.rec.Invoke(history.Op{Process: r.newProc(), F: history.Produce, Records: recs})
	r.stats.Produces++
	p.batches++
	pp.win = append(pp.win, b)
}

// flush sends pp's batches not on the wire, in order, while the
// connection to the leader has room. After a failure it waits until every
// batch is back.
func (p *pipeProducer) flush(pp *pipePart) {
	r := p.r
	if pp.waiting || len(pp.win) == 0 {
		return
	}
	onWire := 0
	for _, b := range pp.win {
		if b.onWire {
			onWire++
		}
	}
	if pp.failed && onWire > 0 {
		return // the rest comes back first
	}
	for _, b := range pp.win {
		if !b.onWire && !b.acked && r.now() >= b.deadline {
			p.startOver("no acknowledgement within the operation timeout; last error: " + b.lastErr)
			return
		}
	}
	leader, ok := p.meta.leader(pp.part)
	if !ok {
		pp.waiting = true
		p.meta.refresh(func() {
			r.w.After(r.backoff(), func() { pp.waiting = false; p.flush(pp) })
		})
		return
	}
	if onWire > 0 && leader != pp.node {
		return // the batches on the old leader's connection come back first
	}
	if pp.failed {
		pp.failed = false
		for i, b := range pp.win {
			if i > 0 && b.sent && !b.acked { // nothing is on the wire: win[0] failed
				r.cover(covPipeResent)
				p.resent++
			}
		}
	}
	pp.node = leader
	c := r.dial(p.conns, leader)
	for _, b := range pp.win {
		if b.onWire || b.acked {
			continue
		}
		if c.full() {
			return // a response makes room
		}
		p.send(pp, c, b)
	}
}

func (p *pipeProducer) send(pp *pipePart, c *pipeConn, b *pipeBatch) {
	r := p.r
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = -1
	req.TimeoutMillis = int32((r.o.RequestTimeout * 8 / 10).Milliseconds())
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = r.topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = pp.part
	rp.Records = encodeBatchCodec(b.values, nil, r.w.Clock().Now().UnixMilli(), producerStamp{pid: p.pid, epoch: p.epoch, seq: b.seq}, b.codec)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	b.onWire, b.sent = true, true
	leader := c.id
	c.send(req, r.o.RequestTimeout, func(resp kmsg.Response, err error) {
		p.answered(pp, b, leader, resp, err)
		// The connection has room again: any partition may go on.
		for _, other := range p.parts {
			if other.node == leader || other == pp {
				p.flush(other)
			}
		}
		p.stopIfDone()
	})
}

// answered handles the answer to batch b.
func (p *pipeProducer) answered(pp *pipePart, b *pipeBatch, from netx.NodeID, resp kmsg.Response, err error) {
	r := p.r
	if b.gen != p.gen || !b.onWire {
		return // started over since: the batch ended indeterminate
	}
	b.onWire = false
	if err != nil {
		b.lastErr = err.Error()
		if err == errConnRefused {
			p.meta.invalidate(pp.part)
			p.retry(pp)
			return
		}
		p.meta.invalidate(pp.part)
		p.startOver(err.Error())
		return
	}
	code, base := produceResult(resp, r.topic, pp.part)
	switch {
	case code == 0 && base >= 0:
		p.complete(pp, b, history.OK, "", from, base)
	case code == kerr.OutOfOrderSequenceNumber.Code && !pp.failed && pp.ackedTo == b.seq && pp.win[0] == b:
		// Every batch before this one was acknowledged, in order, on
		// this connection, and none failed: the broker's table knows
		// the last of them (Kafka's contract for 5 in flight), so the
		// sequence follows. (If this batch was sent before, the window
		// let at most 4 later ones out since, acknowledged or not: the
		// broker still remembers it as a duplicate.)
		r.violation("idempotence", fmt.Sprintf("producer %d epoch %d, partition %d: batch at sequence %d refused OUT_OF_ORDER_SEQUENCE_NUMBER by n%d right after its predecessors were acknowledged",
			p.pid, p.epoch, pp.part, b.seq, from))
		p.startOver(errName(code))
	case code == 0:
		p.startOver(fmt.Sprintf("acknowledged with base offset %d", base))
	case retriable(code), code == kerr.OutOfOrderSequenceNumber.Code && pp.failed:
		b.lastErr = errName(code)
		if code == kerr.NotLeaderForPartition.Code || code == kerr.UnknownTopicOrPartition.Code {
			p.meta.invalidate(pp.part)
		}
		p.retry(pp)
	default:
		// OUT_OF_ORDER_SEQUENCE_NUMBER with no failed batch before it,
		// INVALID_PRODUCER_EPOCH and the like: unknown outcome.
		p.startOver(errName(code))
	}
}

// retry marks pp failed; once every batch on the wire is back, it resends
// after a backoff.
func (p *pipeProducer) retry(pp *pipePart) {
	pp.failed = true
	for _, b := range pp.win {
		if b.onWire {
			return // the last one back schedules the resend
		}
	}
	if pp.waiting {
		return
	}
	pp.waiting = true
	p.r.w.After(p.r.backoff(), func() { pp.waiting = false; p.flush(pp) })
}

// complete ends batch b's operation. An acknowledged batch leaves the
// window with the acknowledged prefix (win's comment); any other leaves
// it at once.
func (p *pipeProducer) complete(pp *pipePart, b *pipeBatch, typ history.Type, why string, from netx.NodeID, base int64) {
	r := p.r
	if typ == history.OK {
		b.acked = true
		for len(pp.win) > 0 && pp.win[0].acked {
			pp.ackedTo = pp.win[0].seq + int32(len(pp.win[0].values))
			pp.win = pp.win[1:]
		}
	} else {
		for i, x := range pp.win {
			if x == b {
				pp.win = append(pp.win[:i], pp.win[i+1:]...)
				break
			}
		}
	}
	res := history.Op{Error: why, Node: int32(from)}
	recs := make([]history.Record, len(b.values))
	for i, v := range b.values {
		recs[i] = history.Record{Topic: r.topic, Partition: pp.part, Offset: -1, Value: v}
		if typ == history.OK {
			recs[i].Offset = base + int64(i)
		}
	}
	res.Records = recs
	r.rec.Complete(b.inv, typ, res)
	if typ == history.OK {
		p.acked++
		r.stats.Acked++
		r.sawOffset(pp.part, base+int64(len(b.values)))
	}
}

// startOver ends every batch not acknowledged as indeterminate and gets
// a new producer id: the old sequences may or may not have been used.
func (p *pipeProducer) startOver(why string) {
	p.gen++
	p.pid = -1
	p.overs++
	for _, pp := range p.parts {
		win := pp.win
		pp.win, pp.seq, pp.failed, pp.ackedTo = nil, 0, false, -1
		for _, b := range win {
			if !b.acked {
				p.complete(pp, b, history.Info, why, 0, 0)
			}
		}
	}
}
