package runtime

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/quota"
)

// Client quota enforcement (KIP-13, KIP-55, KIP-219), per broker as in
// Kafka: each broker measures what each client sends and fetches through
// it, against the quotas in the replicated metadata.
//
//   - Produce: the request's record bytes are recorded when the answer is
//     made; over the producer_byte_rate that applies (Kafka's precedence,
//     controller.State.ClientQuota), the answer carries throttle_time_ms.
//   - Fetch: the answer's record bytes are recorded; over the
//     consumer_byte_rate, the bytes are taken back out and the client gets
//     an empty answer carrying throttle_time_ms (Kafka returns no data to
//     a throttled fetch).
//   - A throttled answer of a version that applies the throttle after the
//     response (Produce v6+, Fetch v8+) leaves at once and the connection
//     is muted for the throttle time (node/kafka throttle.go); one of an
//     older version is held back for the throttle time instead, as Kafka
//     does.
//
// Clients that share a quota share a rate: the rate is keyed by the user
// and client id the matched entity covers (controller.QuotaMatch), so a
// quota set on user alice is one budget for all of alice's client ids.
// The arithmetic is node/quota's (Kafka's sampled rate, 11 windows of 1 s
// by default). Not enforced: request_percentage,
// controller_mutation_rate, connection_creation_rate, and acks=0 produces
// (they get no answer to carry a throttle; Kafka mutes the connection for
// them).

// rateKey names one shared rate.
type rateKey struct {
	quotaKey string // controller.QuotaProducerByteRate or ...ConsumerByteRate
	entity   string // the entity the quota was set on
	user     string
	clientID string
}

// quotaEnforcer holds the rates. Its methods are called on the reactor's
// thread and, for held-back answers, from timers: it locks.
type quotaEnforcer struct {
	cfg quota.Config
	now func() time.Time

	mu        sync.Mutex
	rates     map[rateKey]*quota.Rate
	lastSweep time.Time

	throttle  *prometheus.HistogramVec
	throttled *prometheus.CounterVec
	bytes     *prometheus.CounterVec
}

func newQuotaEnforcer(reg prometheus.Registerer, cfg quota.Config, now func() time.Time) *quotaEnforcer {
	q := &quotaEnforcer{cfg: cfg, now: now, rates: map[rateKey]*quota.Rate{}}
	q.throttle = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "floe_quota_throttle_time_seconds", Help: "Throttle time given to clients over a byte-rate quota, by quota (produce, fetch).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"quota"})
	q.throttled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "floe_quota_throttled_responses_total", Help: "Answers that carried a throttle time, by quota (produce, fetch).",
	}, []string{"quota"})
	q.bytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "floe_quota_recorded_bytes_total", Help: "Bytes counted against byte-rate quotas, by quota (produce, fetch); a throttled fetch's bytes, not sent, are not.",
	}, []string{"quota"})
	for _, l := range []string{"produce", "fetch"} {
		q.throttle.WithLabelValues(l)
		q.throttled.WithLabelValues(l)
		q.bytes.WithLabelValues(l)
	}
	if reg != nil {
		reg.MustRegister(q.throttle, q.throttled, q.bytes)
	}
	return q
}

// record counts v bytes against the rate of m at now and returns the
// throttle. When takeBack is set and the client is throttled, the bytes
// are taken back out (a throttled fetch sends nothing).
func (q *quotaEnforcer) record(quotaKey string, m controller.QuotaMatch, v float64, takeBack bool) time.Duration {
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sweep(now)
	k := rateKey{quotaKey: quotaKey, entity: m.Entity, user: m.User, clientID: m.ClientID}
	r, ok := q.rates[k]
	if !ok {
		r = quota.NewRate(q.cfg)
		q.rates[k] = r
	}
	d := r.RecordAndThrottle(v, m.Limit, now)
	if d > 0 && takeBack {
		r.Unrecord(v, now)
	}
	return d
}

// sweep drops rates with nothing left to remember, at most once a minute.
func (q *quotaEnforcer) sweep(now time.Time) {
	if now.Sub(q.lastSweep) < time.Minute {
		return
	}
	q.lastSweep = now
	for k, r := range q.rates { //floe:unordered deleting idle entries, order irrelevant
		if r.Idle(now) {
			delete(q.rates, k)
		}
	}
}

// quotaSource resolves the quota on quotaKey for a client (the reactor:
// node.Reactor.ClientQuota); it is asked on the reactor's thread.
type quotaSource interface {
	ClientQuota(quotaKey, principal, clientID string) (controller.QuotaMatch, bool)
}

// wrap returns respond, enforcing the byte-rate quota that applies to
// req's client: it runs on the reactor's thread (lookup reads the
// metadata), as does the returned function.
func (q *quotaEnforcer) wrap(src quotaSource, principal, clientID string, req kmsg.Request, respond func(kmsg.Response)) func(kmsg.Response) {
	if q == nil {
		return respond
	}
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		m, ok := src.ClientQuota(controller.QuotaProducerByteRate, principal, clientID)
		if !ok {
			return respond
		}
		n := produceBytes(r)
		return func(resp kmsg.Response) {
			q.bytes.WithLabelValues("produce").Add(float64(n))
			d := q.record(controller.QuotaProducerByteRate, m, float64(n), false)
			pr, ok := resp.(*kmsg.ProduceResponse)
			if d <= 0 || !ok {
				respond(resp)
				return
			}
			cp := *pr
			cp.ThrottleMillis = throttleMillis(d)
			q.deliver(&cp, "produce", d, respond)
		}
	case *kmsg.FetchRequest:
		m, ok := src.ClientQuota(controller.QuotaConsumerByteRate, principal, clientID)
		if !ok {
			return respond
		}
		return func(resp kmsg.Response) {
			fr, ok := resp.(*kmsg.FetchResponse)
			if !ok {
				respond(resp)
				return
			}
			n := fetchBytes(fr)
			d := q.record(controller.QuotaConsumerByteRate, m, float64(n), true)
			if d <= 0 {
				q.bytes.WithLabelValues("fetch").Add(float64(n))
				respond(resp)
				return
			}
			empty := kmsg.NewPtrFetchResponse()
			empty.Version, empty.SessionID = fr.Version, fr.SessionID
			empty.ThrottleMillis = throttleMillis(d)
			q.deliver(empty, "fetch", d, respond)
		}
	}
	return respond
}

// deliver hands a throttled answer to respond: at once when its version
// applies the throttle after the response (the server then mutes the
// connection), after the throttle time otherwise.
func (q *quotaEnforcer) deliver(resp kmsg.Response, label string, d time.Duration, respond func(kmsg.Response)) {
	q.throttle.WithLabelValues(label).Observe(d.Seconds())
	q.throttled.WithLabelValues(label).Inc()
	if _, after := resp.(kmsg.ThrottleResponse).Throttle(); after {
		respond(resp)
		return
	}
	time.AfterFunc(d, func() { respond(resp) })
}

func throttleMillis(d time.Duration) int32 {
	return int32(min(d/time.Millisecond, 1<<31-1))
}

func produceBytes(r *kmsg.ProduceRequest) int {
	n := 0
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			n += len(p.Records)
		}
	}
	return n
}

func fetchBytes(r *kmsg.FetchResponse) int {
	n := 0
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			n += len(p.RecordBatches)
		}
	}
	return n
}
