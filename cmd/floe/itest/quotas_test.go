package itest

// Client quotas through franz-go: kadm's AlterClientQuotas and
// DescribeClientQuotas, Kafka's INVALID_REQUEST for bad input, and a
// producer and a consumer slowed to their byte rates. The rate check is a
// lower bound on the time taken that a broker without quotas fails by
// far: B bytes at a quota of Q bytes/s take at least
// (B - burst)/(1.25*Q) - span seconds, where span is the sampled window
// (samples x window size) and burst what the client can have in flight
// before a throttle reaches it; node/quota TestThrottledBytesBound checks
// that bound against the rate arithmetic itself.

import (
	"errors"
	"io"
	"math"
	"math/rand"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// throttleCount counts the throttles a franz-go client is told of.
type throttleCount struct{ after, total atomic.Int64 }

func (c *throttleCount) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, after bool) {
	if d > 0 {
		c.total.Add(1)
		if after {
			c.after.Add(1)
		}
	}
}

func TestClientQuotasThrottleFranzGo(t *testing.T) {
	const (
		rate      = 200_000 // bytes/s, produce and fetch
		samples   = 11
		window    = 100 * time.Millisecond
		records   = 1000
		valueSize = 1000
		batchMax  = 16 << 10
	)
	span := time.Duration(samples) * window
	b := start(t, WithFlags("--quota-window-num=11", "--quota-window-size=100ms"))
	adm := kadm.NewClient(kgoClient(t, b.KafkaAddr))
	ctx := ctxFor(t, opWaitMax)
	makeTopic(t, b.KafkaAddr, "quota-t", 1, nil)

	slow := kadm.ClientQuotaEntity{{Type: "client-id", Name: ptr("slow")}}
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: slow, Ops: []kadm.AlterClientQuotaOp{
		{Key: "producer_byte_rate", Value: rate}, {Key: "consumer_byte_rate", Value: rate}}}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("alter quotas: %v %+v", err, res)
	}
	desc, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchName: ptr("slow"), MatchType: 0}})
	if err != nil || len(desc) != 1 || len(desc[0].Values) != 2 ||
		desc[0].Values[0] != (kadm.ClientQuotaValue{Key: "consumer_byte_rate", Value: rate}) ||
		desc[0].Values[1] != (kadm.ClientQuotaValue{Key: "producer_byte_rate", Value: rate}) {
		t.Fatalf("describe quotas: %v %+v", err, desc)
	}

	// Bad input: Kafka's INVALID_REQUEST, nothing stored.
	for name, e := range map[string]kadm.AlterClientQuotaEntry{
		"unknown key":   {Entity: slow, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_bytes_rate", Value: 1}}},
		"negative rate": {Entity: slow, Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: -5}}},
		"bad entity":    {Entity: kadm.ClientQuotaEntity{{Type: "topic", Name: ptr("x")}}, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1}}},
		"ip with user": {Entity: kadm.ClientQuotaEntity{{Type: "ip", Name: ptr("127.0.0.1")}, {Type: "user", Name: ptr("a")}},
			Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 1}}},
	} {
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{e})
		if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.InvalidRequest) || res[0].ErrMessage == "" {
			t.Errorf("%s: %v %+v, want INVALID_REQUEST with a message", name, err, res)
		}
	}
	if all, err := adm.DescribeClientQuotas(ctx, false, nil); err != nil || len(all) != 1 {
		t.Fatalf("after bad input: %v %+v", err, all)
	}

	// Produce 1 MB as "slow": throttled, and no faster than the bound.
	var pt throttleCount
	pcl := kgoClient(t, b.KafkaAddr, kgo.ClientID("slow"), kgo.DefaultProduceTopic("quota-t"),
		kgo.ProducerBatchMaxBytes(batchMax), kgo.WithHooks(&pt))
	rng := rand.New(rand.NewSource(1)) // random values: compressed, a batch stays this size
	begin := time.Now()
	pctx := ctxFor(t, 2*time.Minute)
	var failed atomic.Value
	for i := 0; i < records; i++ {
		value := make([]byte, valueSize)
		rng.Read(value)
		pcl.Produce(pctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Store(err)
			}
		})
	}
	if err := pcl.Flush(pctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	took := time.Since(begin)
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("produce: %v", err)
	}
	produced := float64(records * valueSize)
	burst := float64(5 * batchMax) // franz-go keeps at most 5 produce requests in flight per broker
	lower := time.Duration(((produced-burst)/(1.25*rate) - span.Seconds()) * float64(time.Second))
	t.Logf("produce: %d records of %d bytes in %v at a quota of %d B/s (lower bound %v), %d throttles (%d after the response)",
		records, valueSize, took, rate, lower, pt.total.Load(), pt.after.Load())
	if pt.after.Load() == 0 {
		t.Error("the producer was never told of a throttle applied after the response")
	}
	if took < lower {
		t.Errorf("produced %.0f bytes in %v at a quota of %d B/s: faster than the lower bound %v", produced, took, rate, lower)
	}

	// Consume it back as "slow": throttled too.
	var ct throttleCount
	ccl := kgoClient(t, b.KafkaAddr, kgo.ClientID("slow"), kgo.ConsumeTopics("quota-t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(64<<10), kgo.FetchMaxPartitionBytes(64<<10),
		kgo.WithHooks(&ct))
	begin = time.Now()
	cctx := ctxFor(t, 2*time.Minute)
	got := 0
	for got < records {
		fs := ccl.PollFetches(cctx)
		if err := cctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records before the deadline", got, records)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		got += fs.NumRecords()
	}
	took = time.Since(begin)
	lower = time.Duration(((produced-64<<10)/(1.25*rate) - span.Seconds()) * float64(time.Second))
	t.Logf("fetch: %d records in %v (lower bound %v), %d throttles", got, took, lower, ct.total.Load())
	if ct.after.Load() == 0 {
		t.Error("the consumer was never told of a throttle")
	}
	if took < lower {
		t.Errorf("fetched %.0f bytes in %v at a quota of %d B/s: faster than the lower bound %v", produced, took, rate, lower)
	}

	m := scrapeMetrics(t, b)
	t.Logf("recorded bytes: produce %v fetch %v", m[`floe_quota_recorded_bytes_total{quota="produce"}`], m[`floe_quota_recorded_bytes_total{quota="fetch"}`])
	for _, q := range []string{"produce", "fetch"} {
		if v := m[`floe_quota_throttled_responses_total{quota="`+q+`"}`]; v < 1 {
			t.Errorf("floe_quota_throttled_responses_total{quota=%q} = %v", q, v)
		}
	}

	// Removed, the quota is gone from Describe.
	res, err = adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: slow, Ops: []kadm.AlterClientQuotaOp{
		{Key: "producer_byte_rate", Remove: true}, {Key: "consumer_byte_rate", Remove: true}}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("remove quotas: %v %+v", err, res)
	}
	if all, err := adm.DescribeClientQuotas(ctx, false, nil); err != nil || len(all) != 0 {
		t.Fatalf("after removal: %v %+v", err, all)
	}
}

// brokerTime keeps, from franz-go's E2E hook, the time from the end of
// the last Metadata request's write to the end of its answer's read: the
// broker's reactor time for that request lies within it.
type brokerTime struct{ last atomic.Int64 }

func (h *brokerTime) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if key == int16(kmsg.Metadata) {
		h.last.Store(int64(e.ReadWait + e.TimeToRead))
	}
}

// request_percentage (KIP-124) through franz-go: a client that issues
// Metadata requests back to back is held to its share of the reactor's
// time. The reactor time each client cost is read from
// floe_quota_request_time_seconds_total, one client at a time (only the
// test's two clients have a quota); a client with a quota far above
// anything it can use shows what the loop costs unthrottled, so the check
// that the throttled one stays within its quota is one a broker without
// the quota fails.
//
// The bound. At a quota of q (a share of one thread) a client may cost
// q x (its time + the sampled span): the rate is divided by at least
// samples-1 windows, so a span's worth at the start is a burst the quota
// allows; a 25% margin covers the windows' rolling. But Kafka caps a
// request throttle at one window W, so a throttled answer pays for at
// most q x W of reactor time: a request that cost c > q x W leaves
// c - q x W unpaid (the next requests, throttled a window each while the
// rate is still over, pay only for themselves). The cost is wall clock
// from the request's event to its answer (node/runtime reqCost), so on a
// loaded machine a request preempted for 10-30 ms costs that much, far
// over the 2.5 ms a window pays at 1%: issue 14's failure, 118 ms against
// 87 ms allowed at load 15-20, 19 throttles. So the bound adds, for each
// answer whose throttle was capped at W, what the cap could not pay:
//
//	allowed = 1.25 q (took + span) + sum over capped answers of (c_i - q W)+
//
// where c_i is bounded from above by the lesser of the client's time from
// writing the request to reading its answer (brokerTime) and the counter's
// growth since the loop last read it; the loop reads it after every
// throttled answer (the client waits out the throttle then anyway), so
// after a capped answer the next one's is exact. A broker without the
// quota throttles nothing, so the added term is 0 and the bound stays
// 1.25 q (took + span) = 1.25 q x 6.75 s for a 4 s run, about 2.1 q x
// took; the unenforced loop costs what the free one did, at least
// 4 q x took (the guard below): about twice the bound. The quota is 1%,
// or a fifth of what the unthrottled loop used where that is less (a
// starved machine), so the guard holds.
func TestClientRequestQuotaFranzGo(t *testing.T) {
	const (
		maxPercent = 1.0 // of one thread
		samples    = 11
		window     = 250 * time.Millisecond
		runFor     = 4 * time.Second
	)
	span := time.Duration(samples) * window
	b := start(t, WithFlags("--quota-window-num=11", "--quota-window-size=250ms"))
	adm := kadm.NewClient(kgoClient(t, b.KafkaAddr))
	ctx := ctxFor(t, opWaitMax)
	makeTopic(t, b.KafkaAddr, "rq-t", 32, nil)
	setQuota := func(client string, value float64) {
		t.Helper()
		ent := kadm.ClientQuotaEntity{{Type: "client-id", Name: ptr(client)}}
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: ent,
			Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: value}}}})
		if err != nil || len(res) != 1 || res[0].Err != nil {
			t.Fatalf("alter request_percentage for %s: %v %+v", client, err, res)
		}
		waitFor(t, opWaitMax, "the quota of "+client+" in force", func() bool {
			got, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchName: ptr(client)}})
			return err == nil && len(got) == 1 && len(got[0].Values) == 1 && got[0].Values[0].Value == value
		})
	}
	setQuota("free", 1e6)

	// loop sends Metadata requests for every topic back to back for
	// runFor. It returns how many were answered, the reactor time they
	// cost, the time taken, and, for the answers whose throttle was capped
	// at one window, how many there were and the reactor time beyond
	// perCap (q x W) they cost at most.
	type loopRun struct {
		n, capped           int
		cost, took, maxCost time.Duration
		unpaid              time.Duration
	}
	loop := func(clientID string, hooks *throttleCount, perCap time.Duration) loopRun {
		var bt brokerTime
		cl := kgoClient(t, b.KafkaAddr, kgo.ClientID(clientID), kgo.WithHooks(hooks, &bt))
		reactor := func() time.Duration {
			return time.Duration(scrapeMetrics(t, b)["floe_quota_request_time_seconds_total"] * float64(time.Second))
		}
		first := reactor()
		lctx := ctxFor(t, runFor+opWaitMax)
		var r loopRun
		last, begin := first, time.Now()
		for time.Since(begin) < runFor {
			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(lctx, cl)
			if err != nil {
				t.Fatalf("%s: metadata: %v", clientID, err)
			}
			r.n++
			if resp.ThrottleMillis == 0 {
				continue
			}
			now := reactor()
			c := min(time.Duration(bt.last.Load()), now-last)
			last = now
			r.maxCost = max(r.maxCost, c)
			if time.Duration(resp.ThrottleMillis)*time.Millisecond >= window {
				r.capped++
				r.unpaid += max(0, c-perCap)
			}
		}
		r.took = time.Since(begin)
		r.cost = reactor() - first
		return r
	}
	var free, busy throttleCount
	fr := loop("free", &free, 0)
	usedFree := 100 * fr.cost.Seconds() / fr.took.Seconds()
	// The quota is a share of what the unthrottled loop used, so the bound
	// below is one an unenforced quota breaks even on a starved machine
	// (a fixed 1% was out of reach of the free loop at load 40-60).
	percent := min(maxPercent, usedFree/5)
	setQuota("busy", percent)
	perCap := time.Duration(percent / 100 * float64(window))
	br := loop("busy", &busy, perCap)
	usedBusy := 100 * br.cost.Seconds() / br.took.Seconds()
	t.Logf("free: %d requests in %v, %v of reactor time (%.2f%%), %d throttles",
		fr.n, fr.took, fr.cost, usedFree, free.total.Load())
	t.Logf("busy: %d requests in %v, %v of reactor time (%.2f%%; a throttled one cost at most %v) at a quota of %.2f%%, %d throttles (%d after the response), %d capped at %v leaving at most %v unpaid (beyond %v each)",
		br.n, br.took, br.cost, usedBusy, br.maxCost, percent, busy.total.Load(), busy.after.Load(), br.capped, window, br.unpaid, perCap)
	if usedFree < 4*percent {
		t.Fatalf("the unthrottled loop used %.2f%% of the reactor, under 4x the quota %.2f%%: the check below would prove nothing", usedFree, percent)
	}
	if free.total.Load() != 0 {
		t.Errorf("the client with a quota it cannot reach was throttled %d times", free.total.Load())
	}
	if busy.after.Load() == 0 {
		t.Error("the throttled client was never told of a throttle applied after the response")
	}
	allowed := time.Duration(1.25*percent/100*float64(br.took+span)) + br.unpaid
	if br.cost > allowed {
		t.Errorf("the throttled client cost %v of reactor time in %v at a quota of %.2f%%: over the %v allowed (%v of them what %d capped throttles could not pay)",
			br.cost, br.took, percent, allowed, br.unpaid, br.capped)
	}
}

// connection_creation_rate (KIP-612): a client opening connections back to
// back from an address with a quota gets at most its rate of them
// answered; the others are held unanswered, then closed. Another address
// without a quota shows what the loop opens unthrottled, so the bound is
// one a broker without the quota fails. Loopback addresses other than
// 127.0.0.1 keep the test's admin client out of the quota.
func TestConnectionRateQuota(t *testing.T) {
	const (
		maxRate = 20.0 // connections/s
		runFor  = 2 * time.Second
	)
	span := 11 * 100 * time.Millisecond
	b := start(t, WithFlags("--quota-window-num=11", "--quota-window-size=100ms"))
	adm := kadm.NewClient(kgoClient(t, b.KafkaAddr))
	ctx := ctxFor(t, opWaitMax)

	// loop opens connections from src back to back for runFor, each
	// asking ApiVersions once, and counts the answered and the refused
	// (closed unanswered).
	loop := func(src string) (answered, refused int, took time.Duration) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
		req := kmsg.NewRequestFormatter(kmsg.FormatterClientID("conn-rate")).AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1)
		begin := time.Now()
		for time.Since(begin) < runFor {
			nc, err := d.Dial("tcp", b.KafkaAddr)
			if err != nil {
				t.Fatalf("dial from %s: %v", src, err)
			}
			_ = nc.SetDeadline(time.Now().Add(opWaitMax)) // hang guard: a hold is at most the sampled span
			if _, err := nc.Write(req); err != nil {
				t.Fatalf("write from %s: %v", src, err)
			}
			var size [4]byte
			if _, err := io.ReadFull(nc, size[:]); err == nil {
				answered++
			} else if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
				refused++
			} else {
				t.Fatalf("read from %s: %v", src, err)
			}
			nc.Close()
		}
		return answered, refused, time.Since(begin)
	}
	freeN, freeRefused, freeTook := loop("127.0.0.3")
	// The rate is a share of what the address without a quota got, so
	// the bound below is one a broker without the quota breaks even on a
	// starved machine.
	// (a whole number: Kafka's connection_creation_rate is an integer)
	rate := max(1, min(maxRate, math.Floor(float64(freeN)/freeTook.Seconds()/12)))
	ent := kadm.ClientQuotaEntity{{Type: "ip", Name: ptr("127.0.0.2")}}
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: ent,
		Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: rate}}}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("alter connection_creation_rate: %v %+v", err, res)
	}
	waitFor(t, opWaitMax, "the connection rate quota in force", func() bool {
		got, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "ip", MatchName: ptr("127.0.0.2")}})
		return err == nil && len(got) == 1 && len(got[0].Values) == 1 && got[0].Values[0].Value == rate
	})
	n, refused, took := loop("127.0.0.2")
	t.Logf("no quota: %d connections answered in %v (%d refused)", freeN, freeTook, freeRefused)
	t.Logf("quota %.1f/s: %d answered, %d refused in %v", rate, n, refused, took)
	allowed := int(1.25*rate*(took+span).Seconds()) + 1
	if freeN < 4*allowed || freeRefused != 0 {
		t.Fatalf("the address without a quota got %d connections answered (%d refused), not 4x the %d allowed: the check below would prove nothing", freeN, freeRefused, allowed)
	}
	if refused == 0 {
		t.Error("no connection was refused")
	}
	if n > allowed {
		t.Errorf("%d connections answered in %v at %.1f/s: over the %d allowed", n, took, rate, allowed)
	}
	if v := scrapeMetrics(t, b)["floe_quota_connections_refused_total"]; v != float64(refused) {
		t.Errorf("floe_quota_connections_refused_total = %v, the client saw %d refused", v, refused)
	}
}
