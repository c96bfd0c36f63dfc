package runtime

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/quota"
)

type fakeNow struct{ t time.Time }

// fakeSource has byte-rate quotas of 1000 B/s for client id "slow" only,
// and a request_percentage of 10 for client id "busy" only.
type fakeSource struct{ asked []string }

func (f *fakeSource) ClientQuota(key, principal, clientID string) (controller.QuotaMatch, bool) {
	f.asked = append(f.asked, key+" "+principal+" "+clientID)
	switch {
	case clientID == "slow" && key != controller.QuotaRequestPercentage:
		return controller.QuotaMatch{Limit: 1000, Entity: "client-id=slow", ClientID: "slow"}, true
	case clientID == "busy" && key == controller.QuotaRequestPercentage:
		return controller.QuotaMatch{Limit: 10, Entity: "client-id=busy", ClientID: "busy"}, true
	}
	return controller.QuotaMatch{}, false
}

func (f *fakeNow) now() time.Time { return f.t }

func produceReq(version int16, bytes int) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = make([]byte, bytes)
	t := kmsg.NewProduceRequestTopic()
	t.Topic, t.Partitions = "t", []kmsg.ProduceRequestTopicPartition{p}
	req.Topics = append(req.Topics, t)
	return req
}

// The enforcer throttles a produce over its quota with Kafka's throttle
// time, on a copy of the answer; a fetch over its quota gets an empty
// answer and its bytes are not counted; clients without a quota pass
// untouched; the lookup gets the client's principal and id.
func TestQuotaEnforcer(t *testing.T) {
	clock := &fakeNow{t: time.Unix(1000, 0)}
	q := newQuotaEnforcer(nil, quota.Config{Samples: 11, Window: time.Second}, clock.now)
	lookup := &fakeSource{}
	asked := &lookup.asked
	var got kmsg.Response
	respond := func(r kmsg.Response) { got = r }

	// 5000 bytes within the padded 10 s window: 500 B/s, under 1000.
	orig := kmsg.NewPtrProduceResponse()
	orig.Version = 7
	answerOf(q.wrap(lookup, q.begin(), "User:alice", "slow", produceReq(7, 5000), respond))(orig)
	if got != orig {
		t.Fatalf("under the quota: answer replaced")
	}
	// 20000 more: 2500 B/s over 10 s, (2500-1000)/1000*10 s = 15 s.
	answerOf(q.wrap(lookup, q.begin(), "User:alice", "slow", produceReq(7, 20000), respond))(orig)
	pr, ok := got.(*kmsg.ProduceResponse)
	if !ok || pr == orig || pr.ThrottleMillis != 15000 || orig.ThrottleMillis != 0 {
		t.Fatalf("over the quota: %+v (original throttle %d)", got, orig.ThrottleMillis)
	}
	if (*asked)[1] != "producer_byte_rate User:alice slow" {
		t.Fatalf("lookup asked %q", *asked)
	}

	// Another client has no quota: untouched, whatever it sends.
	answerOf(q.wrap(lookup, q.begin(), "User:alice", "fast", produceReq(7, 1<<20), respond))(orig)
	if got != orig {
		t.Fatal("a client without a quota was throttled")
	}

	// Fetch: the first answer fits, the second is over: empty, throttled,
	// its bytes taken back (a third small one is judged without them).
	fetch := func(n int) *kmsg.FetchResponse {
		r := kmsg.NewPtrFetchResponse()
		r.Version, r.SessionID = 11, 7
		p := kmsg.NewFetchResponseTopicPartition()
		p.RecordBatches = make([]byte, n)
		tp := kmsg.NewFetchResponseTopic()
		tp.Topic, tp.Partitions = "t", []kmsg.FetchResponseTopicPartition{p}
		r.Topics = append(r.Topics, tp)
		return r
	}
	freq := kmsg.NewPtrFetchRequest()
	freq.Version = 11
	f1 := fetch(9000)
	answerOf(q.wrap(lookup, q.begin(), "User:alice", "slow", freq, respond))(f1)
	if got != f1 {
		t.Fatal("fetch under the quota: answer replaced")
	}
	answerOf(q.wrap(lookup, q.begin(), "User:alice", "slow", freq, respond))(fetch(50000))
	fr := got.(*kmsg.FetchResponse)
	if len(fr.Topics) != 0 || fr.ThrottleMillis <= 0 || fr.SessionID != 7 || fr.Version != 11 {
		t.Fatalf("fetch over the quota: %+v", fr)
	}
	f3 := fetch(500)
	answerOf(q.wrap(lookup, q.begin(), "User:alice", "slow", freq, respond))(f3)
	if got != f3 {
		t.Fatal("the throttled fetch's bytes were counted")
	}

	// Rates of idle clients are dropped after a minute.
	clock.t = clock.t.Add(2 * time.Minute)
	answerOf(q.wrap(lookup, q.begin(), "User:alice", "slow", produceReq(7, 1), respond))(orig)
	if len(q.rates) != 1 {
		t.Fatalf("%d rates kept, want 1", len(q.rates))
	}
}

// request_percentage (KIP-124): a request costs the reactor time from its
// event's start to its answer, or to the end of its handler call when the
// answer comes later; the rate is in percent of one thread; over it, the
// answer carries a throttle capped at one window, a fetch is answered
// empty, and an answer with no throttle field leaves as it is.
func TestQuotaEnforcerRequestPercentage(t *testing.T) {
	clock := &fakeNow{t: time.Unix(1000, 0)}
	q := newQuotaEnforcer(nil, quota.Config{Samples: 11, Window: time.Second}, clock.now)
	lookup := &fakeSource{}
	var got kmsg.Response
	respond := func(r kmsg.Response) { got = r }
	metadata := func() *kmsg.MetadataResponse {
		r := kmsg.NewPtrMetadataResponse()
		r.Version = 9
		return r
	}
	// serve runs one request: its handler holds the reactor for held and
	// answers after it, or, when late is set, after the call has returned
	// and late more has passed.
	serve := func(clientID string, req kmsg.Request, resp kmsg.Response, held, late time.Duration) {
		answer, s := q.wrap(lookup, q.begin(), "User:alice", clientID, req, respond)
		clock.t = clock.t.Add(held)
		if late == 0 {
			answer(resp)
			s.end()
			return
		}
		s.end()
		clock.t = clock.t.Add(late)
		answer(resp)
	}
	measured := func() float64 {
		return q.rate(controller.QuotaRequestPercentage, controller.QuotaMatch{Entity: "client-id=busy", ClientID: "busy"}).Measure(clock.now())
	}

	// 50 ms of reactor time in a 10 s window: 0.5%, under 10%.
	m1 := metadata()
	serve("busy", kmsg.NewPtrMetadataRequest(), m1, 50*time.Millisecond, 0)
	if got != m1 || m1.ThrottleMillis != 0 {
		t.Fatalf("under the quota: %+v", got)
	}
	if r := measured(); r < 0.49 || r > 0.51 {
		t.Fatalf("measured %.3f%%, want 0.5%%", r)
	}
	// An answer made 3 s after the handler returned (a produce waiting
	// for replication) costs only the 20 ms the handler held the reactor.
	serve("busy", kmsg.NewPtrMetadataRequest(), metadata(), 20*time.Millisecond, 3*time.Second)
	if r := measured(); r < 0.69 || r > 0.71 {
		t.Fatalf("measured %.3f%% after a late answer, want 0.7%%", r)
	}

	// 2 s more: over 10%; the throttle, (20.7-10)/10 x 10 s, is capped at
	// one window.
	m2 := metadata()
	serve("busy", kmsg.NewPtrMetadataRequest(), m2, 2*time.Second, 0)
	if got != m2 || m2.ThrottleMillis != 1000 {
		t.Fatalf("over the quota: throttle %d ms, want 1000", m2.ThrottleMillis)
	}
	// A fetch over it is answered empty, with the throttle.
	freq := kmsg.NewPtrFetchRequest()
	freq.Version = 11
	f := kmsg.NewPtrFetchResponse()
	f.Version, f.SessionID = 11, 3
	f.Topics = append(f.Topics, kmsg.NewFetchResponseTopic())
	serve("busy", freq, f, time.Millisecond, 0)
	if fr := got.(*kmsg.FetchResponse); fr == f || len(fr.Topics) != 0 || fr.ThrottleMillis != 1000 || fr.SessionID != 3 {
		t.Fatalf("fetch over the request quota: %+v", got)
	}
	// An answer without a throttle field leaves as it was made.
	h := kmsg.NewPtrSASLHandshakeResponse()
	serve("busy", kmsg.NewPtrSASLHandshakeRequest(), h, time.Millisecond, 0)
	if got != h {
		t.Fatalf("an answer without a throttle field was replaced: %+v", got)
	}
	// Another client has no request quota: untouched however long it holds.
	m3 := metadata()
	serve("fast", kmsg.NewPtrMetadataRequest(), m3, 5*time.Second, 0)
	if got != m3 || m3.ThrottleMillis != 0 {
		t.Fatalf("a client without a quota was throttled: %+v", got)
	}
}

// fakeIPSource has a connection_creation_rate of 2 on every address but
// 10.0.0.9, which has none.
type fakeIPSource struct{}

func (fakeIPSource) IPQuota(addr netip.Addr) (controller.QuotaMatch, bool) {
	if addr == netip.MustParseAddr("10.0.0.9") {
		return controller.QuotaMatch{}, false
	}
	return controller.QuotaMatch{Limit: 2, Entity: "ip=", IP: addr.String()}, true
}

// connection_creation_rate (KIP-612): connections from one address over
// its rate are refused with a hold of Kafka's throttle time and are not
// counted; each address has its own rate; an address without a quota and
// a non-TCP address pass.
func TestQuotaEnforcerConnectionRate(t *testing.T) {
	clock := &fakeNow{t: time.Unix(1000, 0)}
	q := newQuotaEnforcer(nil, quota.Config{Samples: 2, Window: time.Second}, clock.now)
	post := func(fn func()) { fn() }
	from := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 5555} }
	// The window is at least one whole sample (1 s): two connections at
	// once are 2/s, the third is 3/s, (3-2)/2 x 1 s over.
	var got []time.Duration
	for i := 0; i < 4; i++ {
		got = append(got, q.admitConn(post, fakeIPSource{}, from("10.0.0.1")))
	}
	if got[0] != 0 || got[1] != 0 || got[2] != 500*time.Millisecond || got[3] != 500*time.Millisecond {
		t.Fatalf("holds %v, want [0 0 500ms 500ms] (refused connections not counted)", got)
	}
	if d := q.admitConn(post, fakeIPSource{}, from("10.0.0.2")); d != 0 {
		t.Fatalf("another address shares the rate: held %v", d)
	}
	for i := 0; i < 5; i++ {
		if d := q.admitConn(post, fakeIPSource{}, from("10.0.0.9")); d != 0 {
			t.Fatalf("an address without a quota was held %v", d)
		}
	}
	if d := q.admitConn(post, fakeIPSource{}, &net.UnixAddr{Name: "x", Net: "unix"}); d != 0 {
		t.Fatalf("a non-TCP address was held %v", d)
	}
	clock.t = clock.t.Add(3 * time.Second)
	if d := q.admitConn(post, fakeIPSource{}, from("10.0.0.1")); d != 0 {
		t.Fatalf("after the window passed: held %v", d)
	}
}

// answerOf is wrap's answer function, for the tests that do not end its
// reactor-time measurement.
func answerOf(answer func(kmsg.Response), _ *reqCost) func(kmsg.Response) { return answer }
