package bench

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// pacerBurstMax bounds how many overdue messages an open-loop producer
// sends before it looks at the clock and its stop conditions again.
const pacerBurstMax = 4096

// produceLoop is one producer: closed loop (as fast as the client's buffer
// admits) or, with a rate, open loop on a pacer. It stops when the count is
// spent, the duration (after the warmup) is over, or ctx ends. Records are
// pooled: a record returns to the pool in its promise, when the client is
// done with it, so a run allocates about one record per buffered message,
// not one per message.
func (r *kafkaRun) produceLoop(ctx context.Context, cl *kgo.Client, id int, start time.Time, acks *meter) {
	size := r.cfg.MessageBytes
	pool := sync.Pool{New: func() any { return &kgo.Record{Value: newPayload(size)} }}
	promise := func(rec *kgo.Record, err error) {
		nowNs := time.Now().UnixNano()
		if err != nil {
			acks.fail(err)
		} else {
			stamp, _ := recordStamp(rec)
			acks.observe(stamp, nowNs, len(rec.Value))
			if sentNs, ok := sendStampOf(rec.Value); ok && sentNs != 0 && stamp >= r.stages.warmupEndNs {
				r.stages.fromSendNs.Record(nowNs - sentNs)
			}
		}
		*rec = kgo.Record{Value: rec.Value}
		pool.Put(rec)
	}
	var n uint64 // messages this producer sent; every clientStageEvery-th is timed
	send := func(at time.Time) {
		rec := pool.Get().(*kgo.Record)
		stampRecord(rec, at.UnixNano())
		// The record's CreateTime is its send time; set here, the client
		// does not read the clock again for every record (a clock read is
		// about 7% of the client's CPU at a million records a second).
		rec.Timestamp = at
		sentNs := int64(0) // not timed
		if n%clientStageEvery == 0 {
			sentNs = at.UnixNano()
			if r.cfg.RatePerSec > 0 {
				sentNs = time.Now().UnixNano()
				r.stages.sent(at.UnixNano(), sentNs)
			}
		}
		n++
		putSendStamp(rec.Value, sentNs)
		r.sent.Add(1)
		cl.Produce(ctx, rec, promise)
	}
	var deadline time.Time
	if r.cfg.Duration > 0 {
		deadline = start.Add(r.cfg.Warmup + r.cfg.Duration)
	}
	over := func(at time.Time) bool { return !deadline.IsZero() && !at.Before(deadline) }

	if r.cfg.RatePerSec == 0 {
		for ctx.Err() == nil {
			now := time.Now()
			if over(now) || !r.claim() {
				return
			}
			send(now)
		}
		return
	}
	// Producers share the rate and are spread evenly over one interval,
	// so N producers do not all fire at the same instant.
	perProducer := r.cfg.RatePerSec / float64(r.cfg.Producers)
	offset := time.Duration(float64(id) * 1e9 / perProducer / float64(r.cfg.Producers))
	p := newPacer(start.Add(offset), perProducer, pacerBurstMax)
	for ctx.Err() == nil {
		now := time.Now()
		n := p.due(now)
		if n == 0 {
			time.Sleep(min(p.wait(now), 10*time.Millisecond))
			continue
		}
		for range n {
			at := p.next()
			if over(at) || !r.claim() {
				return
			}
			send(at)
		}
	}
}

// stampRecord writes the send time into the value, or into a header when
// the value is too short to hold it.
func stampRecord(rec *kgo.Record, unixNanos int64) {
	if !putStamp(rec.Value, unixNanos) {
		rec.Headers = append(rec.Headers[:0], kgo.RecordHeader{Key: stampHeader, Value: stampHeaderValue(unixNanos)})
	}
}

// recordStamp reads back what stampRecord wrote.
func recordStamp(rec *kgo.Record) (int64, bool) {
	var hv []byte
	if len(rec.Value) < stampBytes {
		for _, h := range rec.Headers {
			if h.Key == stampHeader {
				hv = h.Value
			}
		}
	}
	return stampOf(rec.Value, hv)
}
