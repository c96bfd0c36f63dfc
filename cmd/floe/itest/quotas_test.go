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

// request_percentage (KIP-124) through franz-go: a client that issues
// Metadata requests back to back is held to its share of the reactor's
// time. The reactor time each client cost is read from
// floe_quota_request_time_seconds_total, one client at a time; a client
// with a quota far above anything it can use shows what the loop costs
// unthrottled, so the check that the throttled one stays within its quota
// is one a broker without the quota fails. The bound allows the padded
// window's burst (the rate is divided by at least the sampled span) and a
// 25% margin. Kafka caps a request throttle at one window, so a client
// whose every request cost more than percent x window would get past any
// quota: the window is long enough (2.5 ms of reactor time per Metadata
// request at 1%) that a loaded machine does not get there. The quota is
// 1%, or a fifth of what the unthrottled loop used where that is less (a
// starved machine), so the bound stays one an unenforced quota breaks.
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
	// runFor and returns how many were answered, the reactor time they
	// cost and the time taken.
	loop := func(clientID string, hooks *throttleCount) (int, time.Duration, time.Duration) {
		cl := kgoClient(t, b.KafkaAddr, kgo.ClientID(clientID), kgo.WithHooks(hooks))
		before := scrapeMetrics(t, b)["floe_quota_request_time_seconds_total"]
		lctx := ctxFor(t, runFor+opWaitMax)
		begin := time.Now()
		n := 0
		for time.Since(begin) < runFor {
			if _, err := kmsg.NewPtrMetadataRequest().RequestWith(lctx, cl); err != nil {
				t.Fatalf("%s: metadata: %v", clientID, err)
			}
			n++
		}
		took := time.Since(begin)
		cost := scrapeMetrics(t, b)["floe_quota_request_time_seconds_total"] - before
		return n, time.Duration(cost * float64(time.Second)), took
	}
	var free, busy throttleCount
	nFree, costFree, tookFree := loop("free", &free)
	usedFree := 100 * costFree.Seconds() / tookFree.Seconds()
	// The quota is a share of what the unthrottled loop used, so the bound
	// below is one an unenforced quota breaks even on a starved machine
	// (a fixed 1% was out of reach of the free loop at load 40-60).
	percent := min(maxPercent, usedFree/5)
	setQuota("busy", percent)
	nBusy, costBusy, tookBusy := loop("busy", &busy)
	usedBusy := 100 * costBusy.Seconds() / tookBusy.Seconds()
	t.Logf("free: %d requests in %v, %v of reactor time (%.2f%%), %d throttles", nFree, tookFree, costFree, usedFree, free.total.Load())
	t.Logf("busy: %d requests in %v, %v of reactor time (%.2f%%) at a quota of %.2f%%, %d throttles (%d after the response)",
		nBusy, tookBusy, costBusy, usedBusy, percent, busy.total.Load(), busy.after.Load())
	if usedFree < 4*percent {
		t.Fatalf("the unthrottled loop used %.2f%% of the reactor, under 4x the quota %.2f%%: the check below would prove nothing", usedFree, percent)
	}
	if free.total.Load() != 0 {
		t.Errorf("the client with a quota it cannot reach was throttled %d times", free.total.Load())
	}
	if busy.after.Load() == 0 {
		t.Error("the throttled client was never told of a throttle applied after the response")
	}
	allowed := time.Duration(1.25 * percent / 100 * float64(tookBusy+span))
	if costBusy > allowed {
		t.Errorf("the throttled client cost %v of reactor time in %v at a quota of %.2f%%: over the %v allowed", costBusy, tookBusy, percent, allowed)
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
