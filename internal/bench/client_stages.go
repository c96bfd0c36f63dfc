package bench

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// clientStages is the producer client's own share of an acknowledgement's
// latency, as far as the client can see it without a clock per record:
//
//   - send_lag: an open-loop message's lateness, from its scheduled send
//     time to the Produce call (the sender's sleep overshoot and CPU
//     share); 0 in a closed loop, so not recorded there;
//
//   - request_wait: a produce request's time from being built in the
//     client to the start of its write (franz-go's BrokerE2E.WriteWait);
//
//   - request: a produce request's round trip, its write started to its
//     response read (TimeToWrite + ReadWait + TimeToRead), which holds the
//     broker's `total` plus the loopback and the client's read scheduling.
//
//   - from_send: a record's acknowledgement latency counted from its
//     Produce call instead of its scheduled time (values of 16 bytes or
//     more carry that time after the stamp): what an application timing
//     its own produce calls sees; the acknowledgement latency minus send_lag.
//
// send_lag and from_send time one message in clientStageEvery per producer
// (a clock read and two histogram updates per message cost the client
// about 10% more CPU at a million messages a second, and the client shares
// the machine's cores with the brokers); their counts are of those.
//
// What is left of a record's acknowledgement latency is its time in the
// client's buffer (the linger, batches waiting for an in-flight slot) and
// the callback. Only records and requests after the warmup count.
const clientStageEvery = 16

type clientStages struct {
	warmupEndNs int64
	sendLagNs   Histogram
	reqWaitNs   Histogram
	requestNs   Histogram
	fromSendNs  Histogram
}

// sent records a message scheduled at scheduledNs and handed to the client
// at nowNs.
func (c *clientStages) sent(scheduledNs, nowNs int64) {
	if scheduledNs >= c.warmupEndNs {
		c.sendLagNs.Record(max(nowNs-scheduledNs, 0))
	}
}

// hook returns the kgo hook that times the client's produce requests.
func (c *clientStages) hook() kgo.Hook { return requestHook{c} }

type requestHook struct{ c *clientStages }

// produceKey is the Kafka API key of Produce.
const produceKey = 0

func (h requestHook) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key != produceKey || e2e.Err() != nil || time.Now().UnixNano() < h.c.warmupEndNs {
		return
	}
	h.c.reqWaitNs.Record(int64(e2e.WriteWait))
	h.c.requestNs.Record(int64(e2e.DurationE2E()))
}

var _ kgo.HookBrokerE2E = requestHook{}

// latencies is the stages in the broker stages' form (quantiles in ms).
func (c *clientStages) latencies() []StageLatency {
	var out []StageLatency
	for _, s := range []struct {
		name string
		h    *Histogram
	}{{"send_lag", &c.sendLagNs}, {"request_wait", &c.reqWaitNs}, {"request", &c.requestNs}, {"from_send", &c.fromSendNs}} {
		if s.h.Count() == 0 {
			continue
		}
		ms := func(ns int64) float64 { return float64(ns) / 1e6 }
		out = append(out, StageLatency{Stage: s.name, Count: uint64(s.h.Count()),
			P50Ms: ms(s.h.ValueAt(50)), P90Ms: ms(s.h.ValueAt(90)), P99Ms: ms(s.h.ValueAt(99)), MeanMs: s.h.Mean() / 1e6})
	}
	return out
}
