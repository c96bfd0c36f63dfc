package itest

// The dead-letter topic of a share group (beyond Kafka, issue 18) with
// franz-go's share consumer: a record the consumer rejects, and one it
// releases until the delivery limit, are copied to the group's
// errors.deadletterqueue.topic.name (created by the broker) with their key,
// value and headers and the origin headers, and a plain consumer reads
// them there. Waits are bounded; nothing is timed.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestShareGroupDeadLetterTopic(t *testing.T) {
	b := start(t)
	makeTopic(t, b.KafkaAddr, "orders", 1, nil)
	admin := kgoClient(t, b.KafkaAddr)
	setGroupConfigs(t, admin, "billing", "share.auto.offset.reset", "earliest", "share.delivery.count.limit", "2",
		"errors.deadletterqueue.topic.name", "dlq.orders")
	var recs []*kgo.Record
	for i := 0; i < 4; i++ {
		recs = append(recs, &kgo.Record{Topic: "orders", Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i)),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte(fmt.Sprintf("t%d", i))}}})
	}
	if err := admin.ProduceSync(ctxFor(t, opWaitMax), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	// v1 is rejected, v2 released at every delivery (to the limit), the
	// rest accepted.
	cl := newShareClient(t, b.KafkaAddr, "billing", "orders")
	ctx, cancel := context.WithTimeout(context.Background(), bulkWaitMax)
	defer cancel()
	var mu sync.Mutex
	accepted := map[string]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				switch string(r.Value) {
				case "v1":
					r.Ack(kgo.AckReject)
				case "v2":
					r.Ack(kgo.AckRelease)
				default:
					mu.Lock()
					accepted[string(r.Value)]++
					mu.Unlock()
					r.Ack(kgo.AckAccept)
				}
			})
			cl.FlushAcks(ctx)
		}
	}()

	// A plain consumer reads the dead-letter topic.
	reader := kgoClient(t, b.KafkaAddr, kgo.ConsumeTopics("dlq.orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var dead []*kgo.Record
	eventually(t, bulkWaitMax, "two dead letters", func() bool {
		pctx, pcancel := context.WithTimeout(ctx, opWaitMax/10)
		defer pcancel()
		reader.PollFetches(pctx).EachRecord(func(r *kgo.Record) { dead = append(dead, r) })
		return len(dead) >= 2
	})
	cancel()
	<-done
	if len(dead) != 2 {
		t.Fatalf("%d dead letters, want 2", len(dead))
	}
	want := []struct{ key, value, trace, offset, count, reason string }{
		{"k1", "v1", "t1", "1", "1", "rejected"},
		{"k2", "v2", "t2", "2", "2", "delivery-limit"},
	}
	for i, w := range want {
		r := dead[i]
		h := map[string]string{}
		for _, x := range r.Headers {
			h[x.Key] = string(x.Value)
		}
		if string(r.Key) != w.key || string(r.Value) != w.value || h["trace"] != w.trace {
			t.Errorf("dead letter %d: key %q value %q trace %q, want %s %s %s", i, r.Key, r.Value, h["trace"], w.key, w.value, w.trace)
		}
		for k, v := range map[string]string{"__dlq.errors.topic": "orders", "__dlq.errors.partition": "0", "__dlq.errors.offset": w.offset,
			"__dlq.errors.group.id": "billing", "__dlq.errors.delivery.count": w.count, "__dlq.errors.reason": w.reason} {
			if h[k] != v {
				t.Errorf("dead letter %d: header %s = %q, want %q", i, k, h[k], v)
			}
		}
		if h["__dlq.errors.timestamp"] == "" {
			t.Errorf("dead letter %d has no time header", i)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if accepted["v0"] != 1 || accepted["v3"] != 1 {
		t.Errorf("accepted %v, want v0 and v3 once each", accepted)
	}
	// The share metrics: 4 records handed out plus v2 again (count 2),
	// one reject, two releases, two accepts, two dead letters. A dead
	// letter is counted once its archive (a share-state write) commits,
	// which is after its copy can be read from dlq.orders: wait, bounded,
	// until both are counted, then check every series exactly.
	var m map[string]float64
	eventually(t, opWaitMax, "both dead letters archived", func() bool {
		m = scrapeMetrics(t, b)
		return m[`floe_share_dead_lettered_total{group="billing"}`] >= 2
	})
	wantMetric(t, m, `floe_share_records_acquired_total{group="billing"}`, 5)
	wantMetric(t, m, `floe_share_records_redelivered_total{group="billing"}`, 1)
	wantMetric(t, m, `floe_share_acknowledgements_total{group="billing",type="reject"}`, 1)
	wantMetric(t, m, `floe_share_acknowledgements_total{group="billing",type="release"}`, 2)
	wantMetric(t, m, `floe_share_acknowledgements_total{group="billing",type="accept"}`, 2)
	wantMetric(t, m, `floe_share_dead_lettered_total{group="billing"}`, 2)
	wantMetric(t, m, `floe_share_dead_letters_pending{group="billing"}`, 0)
	wantMetric(t, m, `floe_share_records_in_flight{group="billing"}`, 0)
}

// tryGroupConfig sets one group config and returns the resource's error
// code and message.
func tryGroupConfig(t *testing.T, cl *kgo.Client, group, name, value string) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = name, kmsg.StringPtr(value)
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctxFor(t, opWaitMax), cl)
	if err != nil || len(resp.Resources) != 1 {
		t.Fatalf("alter group configs of %s: %v %+v", group, err, resp)
	}
	msg := ""
	if m := resp.Resources[0].ErrorMessage; m != nil {
		msg = *m
	}
	return resp.Resources[0].ErrorCode, msg
}

// TestShareGroupDeadLetterOptIn: KIP-1191's opt-ins with a broker that
// does not create dead-letter topics (--dlq-auto-create-topics=false, as
// Kafka's default). A group may not name an existing topic without
// errors.deadletterqueue.group.enable=true, a name without the prefix
// dlq., or a missing topic: each is INVALID_CONFIG with the reason. Once
// the topic is opted in (a topic config, set with kadm), the group takes
// it, and a record a franz-go share consumer rejects is found there.
func TestShareGroupDeadLetterOptIn(t *testing.T) {
	b := start(t, WithFlags("--dlq-auto-create-topics=false"))
	makeTopic(t, b.KafkaAddr, "orders", 1, nil)
	makeTopic(t, b.KafkaAddr, "dlq.orders", 1, nil)
	admin := kgoClient(t, b.KafkaAddr)
	for _, bad := range []struct{ topic, why string }{
		{"dlq.orders", "DLQ is not enabled on configured DLQ topic"},
		{"orders.dead", "does not comply with the DLQ topic prefix"},
		{"dlq.missing", "auto create is disabled"},
		{"__consumer_offsets", "internal"},
	} {
		code, msg := tryGroupConfig(t, admin, "billing", "errors.deadletterqueue.topic.name", bad.topic)
		if code != kerr.InvalidConfig.Code || !strings.Contains(msg, bad.why) {
			t.Errorf("dead-letter topic %s: %v %q, want INVALID_CONFIG saying %q", bad.topic, kerr.ErrorForCode(code), msg, bad.why)
		}
	}
	adm := kadm.NewClient(admin)
	on := "true"
	res, err := adm.AlterTopicConfigs(ctxFor(t, opWaitMax), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "errors.deadletterqueue.group.enable", Value: &on}}, "dlq.orders")
	if err == nil {
		_, err = res.On("dlq.orders", nil)
	}
	if err != nil {
		t.Fatalf("opt dlq.orders in: %v", err)
	}
	setGroupConfigs(t, admin, "billing", "share.auto.offset.reset", "earliest", "errors.deadletterqueue.topic.name", "dlq.orders")
	if err := admin.ProduceSync(ctxFor(t, opWaitMax), &kgo.Record{Topic: "orders", Value: []byte("poison")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cl := newShareClient(t, b.KafkaAddr, "billing", "orders")
	reader := kgoClient(t, b.KafkaAddr, kgo.ConsumeTopics("dlq.orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ctxFor(t, bulkWaitMax)
	var dead []*kgo.Record
	eventually(t, bulkWaitMax, "the rejected record in dlq.orders", func() bool {
		pctx, pcancel := context.WithTimeout(ctx, opWaitMax/10)
		defer pcancel()
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { r.Ack(kgo.AckReject) })
		cl.FlushAcks(pctx)
		reader.PollFetches(pctx).EachRecord(func(r *kgo.Record) { dead = append(dead, r) })
		return len(dead) >= 1
	})
	if len(dead) != 1 || string(dead[0].Value) != "poison" {
		t.Fatalf("dead letters %+v, want the one rejected record", dead)
	}
}

// TestShareGroupDeadLetterHeadersOnly: KIP-1191's
// errors.deadletterqueue.copy.record.enable=false. A record the franz-go
// share consumer rejects lands in the dead-letter topic as the
// __dlq.errors.* headers only: a null key and value, none of its own
// headers; the group's DescribeConfigs shows the setting.
func TestShareGroupDeadLetterHeadersOnly(t *testing.T) {
	b := start(t)
	makeTopic(t, b.KafkaAddr, "audit", 1, nil)
	admin := kgoClient(t, b.KafkaAddr)
	setGroupConfigs(t, admin, "auditors", "share.auto.offset.reset", "earliest",
		"errors.deadletterqueue.topic.name", "dlq.audit", "errors.deadletterqueue.copy.record.enable", "false")
	rec := &kgo.Record{Topic: "audit", Key: []byte("k0"), Value: []byte("v0"), Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t0")}}}
	if err := admin.ProduceSync(ctxFor(t, opWaitMax), rec).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cl := newShareClient(t, b.KafkaAddr, "auditors", "audit")
	ctx, cancel := context.WithTimeout(context.Background(), bulkWaitMax)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { r.Ack(kgo.AckReject) })
			cl.FlushAcks(ctx)
		}
	}()
	reader := kgoClient(t, b.KafkaAddr, kgo.ConsumeTopics("dlq.audit"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var dead []*kgo.Record
	eventually(t, bulkWaitMax, "a dead letter", func() bool {
		pctx, pcancel := context.WithTimeout(ctx, opWaitMax/10)
		defer pcancel()
		reader.PollFetches(pctx).EachRecord(func(r *kgo.Record) { dead = append(dead, r) })
		return len(dead) >= 1
	})
	cancel()
	<-done
	r := dead[0]
	if r.Key != nil || r.Value != nil {
		t.Errorf("dead letter key %q value %q, want null (copy.record.enable=false)", r.Key, r.Value)
	}
	h := map[string]string{}
	for _, x := range r.Headers {
		if !strings.HasPrefix(x.Key, "__dlq.errors.") {
			t.Errorf("dead letter carries the record's header %s (copy.record.enable=false)", x.Key)
		}
		h[x.Key] = string(x.Value)
	}
	for k, v := range map[string]string{"__dlq.errors.topic": "audit", "__dlq.errors.offset": "0", "__dlq.errors.group.id": "auditors",
		"__dlq.errors.reason": "rejected"} {
		if h[k] != v {
			t.Errorf("dead letter header %s = %q, want %q", k, h[k], v)
		}
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "auditors"
	rr.ConfigNames = []string{"errors.deadletterqueue.copy.record.enable"}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctxFor(t, opWaitMax), admin)
	if err != nil || len(resp.Resources) != 1 || len(resp.Resources[0].Configs) != 1 {
		t.Fatalf("describe group configs: %v %+v", err, resp)
	}
	if c := resp.Resources[0].Configs[0]; c.Value == nil || *c.Value != "false" {
		t.Errorf("described %s = %v, want false", c.Name, c.Value)
	}
}
