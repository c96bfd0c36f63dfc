package runtime

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/quota"
)

type fakeNow struct{ t time.Time }

// fakeSource has a quota of 1000 B/s for client id "slow" only.
type fakeSource struct{ asked []string }

func (f *fakeSource) ClientQuota(key, principal, clientID string) (controller.QuotaMatch, bool) {
	f.asked = append(f.asked, key+" "+principal+" "+clientID)
	if clientID != "slow" {
		return controller.QuotaMatch{}, false
	}
	return controller.QuotaMatch{Limit: 1000, Entity: "client-id=slow", ClientID: "slow"}, true
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
	q.wrap(lookup, "User:alice", "slow", produceReq(7, 5000), respond)(orig)
	if got != orig {
		t.Fatalf("under the quota: answer replaced")
	}
	// 20000 more: 2500 B/s over 10 s, (2500-1000)/1000*10 s = 15 s.
	q.wrap(lookup, "User:alice", "slow", produceReq(7, 20000), respond)(orig)
	pr, ok := got.(*kmsg.ProduceResponse)
	if !ok || pr == orig || pr.ThrottleMillis != 15000 || orig.ThrottleMillis != 0 {
		t.Fatalf("over the quota: %+v (original throttle %d)", got, orig.ThrottleMillis)
	}
	if (*asked)[0] != "producer_byte_rate User:alice slow" {
		t.Fatalf("lookup asked %q", *asked)
	}

	// Another client has no quota: untouched, whatever it sends.
	q.wrap(lookup, "User:alice", "fast", produceReq(7, 1<<20), respond)(orig)
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
	q.wrap(lookup, "User:alice", "slow", freq, respond)(f1)
	if got != f1 {
		t.Fatal("fetch under the quota: answer replaced")
	}
	q.wrap(lookup, "User:alice", "slow", freq, respond)(fetch(50000))
	fr := got.(*kmsg.FetchResponse)
	if len(fr.Topics) != 0 || fr.ThrottleMillis <= 0 || fr.SessionID != 7 || fr.Version != 11 {
		t.Fatalf("fetch over the quota: %+v", fr)
	}
	f3 := fetch(500)
	q.wrap(lookup, "User:alice", "slow", freq, respond)(f3)
	if got != f3 {
		t.Fatal("the throttled fetch's bytes were counted")
	}

	// Rates of idle clients are dropped after a minute.
	clock.t = clock.t.Add(2 * time.Minute)
	q.wrap(lookup, "User:alice", "slow", produceReq(7, 1), respond)(orig)
	if len(q.rates) != 1 {
		t.Fatalf("%d rates kept, want 1", len(q.rates))
	}
}
