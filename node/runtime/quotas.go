package runtime

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/quota"
)

// Client quota enforcement (KIP-13, KIP-55, KIP-124, KIP-219), per
// broker as in Kafka: each broker measures what each client sends, fetches
// and costs through it, against the quotas in the replicated metadata.
//
//   - Produce: the request's record bytes are recorded when the answer is
//     made; over the producer_byte_rate that applies (Kafka's precedence,
//     controller.State.ClientQuota), the answer carries throttle_time_ms.
//   - Fetch: the answer's record bytes are recorded; over the
//     consumer_byte_rate, the bytes are taken back out and the client gets
//     an empty answer carrying throttle_time_ms (Kafka returns no data to
//     a throttled fetch).
//   - Every request: request_percentage (KIP-124) bounds the share of a
//     request thread's time a client may use, in percent of one thread.
//     Floe's request thread is the reactor, so a request costs the time
//     its handler held the reactor: from the event's start to the end of
//     its HandleRequest call, or to its answer when the answer is made
//     first (reqCost). The later answer of a request that waited for
//     replication costs the reactor little and is not counted. The cost
//     is recorded as Kafka records it, in percent-seconds (elapsed x 100
//     / 1 s), so the sampled rate is in percent. A throttled answer
//     carries the larger of the byte-rate and request throttles; a fetch
//     throttled by either is answered empty, its bytes taken back.
//   - A throttled answer of a version that applies the throttle after the
//     response (Produce v6+, Fetch v8+, and most APIs' newer versions)
//     leaves at once and the connection is muted for the throttle time
//     (node/kafka throttle.go); one of an older version is held back for
//     the throttle time instead, as Kafka does. An answer with no
//     throttle field is sent as it is; its time still counts.
//
// Clients that share a quota share a rate: the rate is keyed by the user
// and client id the matched entity covers (controller.QuotaMatch), so a
// quota set on user alice is one budget for all of alice's client ids.
// The arithmetic is node/quota's (Kafka's sampled rate, 11 windows of 1 s
// by default).
//
// connection_creation_rate (KIP-612) is per source address: each accepted
// connection is counted against the ip quota that applies to its address
// (controller.State.IPQuota: the address's own entity, else the default
// ip) before anything of it is read. Over the quota the connection is
// refused: it is not counted (Kafka unrecords it), and the server holds
// it unread for the throttle time, then closes it (kafka.Config.AdmitConn),
// as Kafka delays closing it so the client does not reconnect at once.
//
// Not enforced: controller_mutation_rate and acks=0 produces (they get no
// answer to carry a throttle; Kafka mutes the connection for them).

// rateKey names one shared rate.
type rateKey struct {
	quotaKey string // controller.QuotaProducerByteRate or ...ConsumerByteRate
	entity   string // the entity the quota was set on
	user     string
	clientID string
	ip       string
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
	reqTime   prometheus.Counter
	refused   prometheus.Counter
}

func newQuotaEnforcer(reg prometheus.Registerer, cfg quota.Config, now func() time.Time) *quotaEnforcer {
	q := &quotaEnforcer{cfg: cfg, now: now, rates: map[rateKey]*quota.Rate{}}
	q.throttle = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "floe_quota_throttle_time_seconds", Help: "Throttle time given to clients over a quota, by the quota whose throttle was the larger (produce, fetch: byte rates; request: request_percentage).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"quota"})
	q.throttled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "floe_quota_throttled_responses_total", Help: "Answers that carried a throttle time, by the quota whose throttle was the larger (produce, fetch, request).",
	}, []string{"quota"})
	q.bytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "floe_quota_recorded_bytes_total", Help: "Bytes counted against byte-rate quotas, by quota (produce, fetch); a throttled fetch's bytes, not sent, are not.",
	}, []string{"quota"})
	q.reqTime = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "floe_quota_request_time_seconds_total", Help: "Reactor time counted against request_percentage quotas (KIP-124), in seconds.",
	})
	q.refused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "floe_quota_connections_refused_total", Help: "Connections refused over a connection_creation_rate quota (KIP-612): held unread for the throttle time, then closed.",
	})
	for _, l := range []string{"produce", "fetch", "request"} {
		q.throttle.WithLabelValues(l)
		q.throttled.WithLabelValues(l)
	}
	q.bytes.WithLabelValues("produce")
	q.bytes.WithLabelValues("fetch")
	if reg != nil {
		reg.MustRegister(q.throttle, q.throttled, q.bytes, q.reqTime, q.refused)
	}
	return q
}

// record counts v against the rate of m at now and returns the throttle.
func (q *quotaEnforcer) record(quotaKey string, m controller.QuotaMatch, v float64) time.Duration {
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sweep(now)
	return q.rate(quotaKey, m).RecordAndThrottle(v, m.Limit, now)
}

// unrecord takes v back out of the rate of m (a throttled fetch sends
// nothing).
func (q *quotaEnforcer) unrecord(quotaKey string, m controller.QuotaMatch, v float64) {
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.rate(quotaKey, m).Unrecord(v, now)
}

// rate returns the shared rate of m under quotaKey, made on first use.
// The caller holds q.mu.
func (q *quotaEnforcer) rate(quotaKey string, m controller.QuotaMatch) *quota.Rate {
	k := rateKey{quotaKey: quotaKey, entity: m.Entity, user: m.User, clientID: m.ClientID, ip: m.IP}
	r, ok := q.rates[k]
	if !ok {
		r = quota.NewRate(q.cfg)
		q.rates[k] = r
	}
	return r
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

// reqCost is the reactor time of one request, for request_percentage:
// from begin, at the start of its event, to done, at the end of its
// HandleRequest call, or to its answer when that comes first. Its methods
// run on the reactor's thread; a nil *reqCost measures nothing.
type reqCost struct {
	now   func() time.Time
	start time.Time
	held  time.Duration
	done  bool
}

// begin starts measuring a request's reactor time: it reads the clock, and
// wrap makes the *reqCost only if a quota applies, so that a request
// without one allocates nothing for quotas (issue 21).
func (q *quotaEnforcer) begin() time.Time {
	if q == nil {
		return time.Time{}
	}
	return q.now()
}

// end marks the end of the request's HandleRequest call.
func (s *reqCost) end() {
	if s != nil && !s.done {
		s.held, s.done = s.now().Sub(s.start), true
	}
}

// reactorTime is the request's reactor time so far: the whole call once
// it has returned, the time until now while it runs.
func (s *reqCost) reactorTime() time.Duration {
	if s == nil {
		return 0
	}
	if !s.done {
		return s.now().Sub(s.start)
	}
	return s.held
}

// percentSeconds converts reactor time to Kafka's request-quota unit
// (ClientRequestQuotaManager.nanosToPercentage): 1 s of one thread is 100.
func percentSeconds(d time.Duration) float64 { return d.Seconds() * 100 }

// wrap returns respond, enforcing the quotas that apply to req's client:
// its byte rate (produce, fetch) and its request_percentage, measured from
// start (begin) by the returned *reqCost, which the caller ends after its
// HandleRequest call (nil, measuring nothing, when no quota applies). It
// runs on the reactor's thread (lookup reads the metadata), as does the
// returned function.
func (q *quotaEnforcer) wrap(src quotaSource, start time.Time, principal, clientID string, req kmsg.Request, respond func(kmsg.Response)) (func(kmsg.Response), *reqCost) {
	if q == nil {
		return respond, nil
	}
	rq, reqQuota := src.ClientQuota(controller.QuotaRequestPercentage, principal, clientID)
	var bq controller.QuotaMatch
	byteQuota := false
	switch req.(type) {
	case *kmsg.ProduceRequest:
		bq, byteQuota = src.ClientQuota(controller.QuotaProducerByteRate, principal, clientID)
	case *kmsg.FetchRequest:
		bq, byteQuota = src.ClientQuota(controller.QuotaConsumerByteRate, principal, clientID)
	}
	if !reqQuota && !byteQuota {
		return respond, nil
	}
	s := &reqCost{now: q.now, start: start}
	return func(resp kmsg.Response) {
		var d time.Duration
		label := ""
		if reqQuota {
			cost := s.reactorTime()
			q.reqTime.Add(cost.Seconds())
			d, label = min(q.record(controller.QuotaRequestPercentage, rq, percentSeconds(cost)), q.window()), "request"
		}
		switch r := resp.(type) {
		case *kmsg.ProduceResponse:
			if byteQuota {
				n := produceBytes(req.(*kmsg.ProduceRequest))
				q.bytes.WithLabelValues("produce").Add(float64(n))
				if bd := q.record(controller.QuotaProducerByteRate, bq, float64(n)); bd >= d {
					d, label = bd, "produce"
				}
			}
			if d > 0 {
				cp := *r // throttle a copy: the handler's answer stays as it made it
				cp.ThrottleMillis = throttleMillis(d)
				resp = &cp
			}
		case *kmsg.FetchResponse:
			d, label = q.fetchThrottle(bq, byteQuota, r, d, label)
			if d > 0 {
				empty := kmsg.NewPtrFetchResponse()
				empty.Version, empty.SessionID = r.Version, r.SessionID
				empty.ThrottleMillis = throttleMillis(d)
				resp = empty
			}
		default:
			if t, ok := resp.(kmsg.SetThrottleResponse); ok && d > 0 {
				t.SetThrottle(throttleMillis(d))
			} else {
				d = 0 // no throttle field (or no answer): nothing to mute for
			}
		}
		if d <= 0 {
			respond(resp)
			return
		}
		q.deliver(resp, label, d, respond)
	}, s
}

// window is the length of one quota window, the most a request_percentage
// throttle can be: Kafka's ClientRequestQuotaManager caps it there, since
// a client idle for a window has paid for any one request.
func (q *quotaEnforcer) window() time.Duration {
	if q.cfg.Window > 0 {
		return q.cfg.Window
	}
	return quota.DefaultWindow
}

// fetchThrottle records a fetch answer's bytes against its byte-rate
// quota and returns the larger of that throttle and the request throttle
// d. A throttled fetch is answered empty, so its bytes are taken back out
// (Kafka's unrecordQuotaSensor).
func (q *quotaEnforcer) fetchThrottle(bq controller.QuotaMatch, byteQuota bool, r *kmsg.FetchResponse, d time.Duration, label string) (time.Duration, string) {
	if !byteQuota {
		return d, label
	}
	n := float64(fetchBytes(r))
	if bd := q.record(controller.QuotaConsumerByteRate, bq, n); bd >= d {
		d, label = bd, "fetch"
	}
	if d > 0 {
		q.unrecord(controller.QuotaConsumerByteRate, bq, n)
	} else {
		q.bytes.WithLabelValues("fetch").Add(n)
	}
	return d, label
}

// ipQuotaSource resolves the connection_creation_rate quota for an
// address (node.Reactor.IPQuota); it is asked on the reactor's thread.
type ipQuotaSource interface {
	IPQuota(addr netip.Addr) (controller.QuotaMatch, bool)
}

// ipLookupMax bounds how long an accept waits for the reactor to resolve
// its address's quota; a reactor that busy admits the connection.
const ipLookupMax = time.Second

// admitConn is kafka.Config.AdmitConn: it counts a new connection from
// remote against its address's connection_creation_rate and returns how
// long to hold it before closing it when over (0: admitted). post runs a
// function on the reactor's thread.
func (q *quotaEnforcer) admitConn(post func(func()), src ipQuotaSource, remote net.Addr) time.Duration {
	ta, ok := remote.(*net.TCPAddr)
	if q == nil || !ok {
		return 0
	}
	addr := ta.AddrPort().Addr().Unmap()
	type found struct {
		m  controller.QuotaMatch
		ok bool
	}
	ch := make(chan found, 1) // buffered: a late answer does not block the reactor
	post(func() {
		m, ok := src.IPQuota(addr)
		ch <- found{m, ok}
	})
	var f found
	select {
	case f = <-ch:
	case <-time.After(ipLookupMax):
	}
	if !f.ok {
		return 0
	}
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sweep(now)
	r := q.rate(controller.QuotaConnectionCreationRate, f.m)
	d := r.RecordAndThrottle(1, f.m.Limit, now)
	if d <= 0 {
		return 0
	}
	r.Unrecord(1, now) // refused: not counted, as Kafka unrecords it
	q.refused.Inc()
	return min(d, q.span())
}

// span is the sampled span, samples x window: the longest a measured rate
// takes to forget everything, so no hold needs to be longer.
func (q *quotaEnforcer) span() time.Duration {
	n := q.cfg.Samples
	if n <= 0 {
		n = quota.DefaultSamples
	}
	return time.Duration(n) * q.window()
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
