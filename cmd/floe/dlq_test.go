package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/runtime"
)

// TestDLQCLI: a share consumer rejects one of three records; floe dlq list
// shows it with its origin and reason; floe dlq redrive produces it back to
// its source partition with its own key and headers and without the
// dead-letter headers, and a second redrive sends nothing. Bad invocations
// are usage errors; a group without a dead-letter topic says so.
func TestDLQCLI(t *testing.T) {
	addr := startBrokerWith(t, func(o *runtime.Options) { o.Node.Shares.AutoOffsetReset = "earliest" })
	brokers := []string{"--brokers", addr, "--timeout", "20s"}
	dlq := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := dlqMain(append(args, brokers...), &out)
		return out.String(), err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	for _, bad := range [][]string{{"list"}, {"list", "a", "b"}, {"purge", "g"}} {
		if _, err := dlq(bad...); !errors.Is(err, errUsage) {
			t.Errorf("floe dlq %v: %v, want a usage error", bad, err)
		}
	}
	if _, err := dlq("list", "nobody"); err == nil || !strings.Contains(err.Error(), "has no dead-letter topic") {
		t.Errorf("floe dlq list of a group without a dead-letter topic: %v", err)
	}

	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "workers"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "errors.deadletterqueue.topic.name", kmsg.StringPtr("dlq.jobs")
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	if resp, err := req.RequestWith(ctx, admin); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("set the dead-letter topic: %v %+v", err, resp)
	}
	var recs []*kgo.Record
	for _, v := range []string{"a", "b", "c"} {
		recs = append(recs, &kgo.Record{Topic: "jobs", Key: []byte("k" + v), Value: []byte(v),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t" + v)}}})
	}
	if err := admin.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	sc, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ShareGroup("workers"), kgo.ConsumeTopics("jobs"), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	seen := 0
	for seen < 3 && ctx.Err() == nil {
		sc.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			seen++
			if string(r.Value) == "b" {
				r.Ack(kgo.AckReject)
				return
			}
			r.Ack(kgo.AckAccept)
		})
		sc.FlushAcks(ctx)
	}
	if seen < 3 {
		t.Fatalf("share consumer saw %d of 3 records", seen)
	}

	var out string
	for ctx.Err() == nil {
		if out, err = dlq("list", "workers"); err == nil && strings.Contains(out, "1 dead letters of group workers in dlq.jobs") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !containsFieldsPrefix(out, "0 0 jobs/0@1 1 rejected") || !strings.Contains(out, `"kb"`) || !strings.Contains(out, `"b"`) {
		t.Fatalf("floe dlq list workers: %v\n%s", err, out)
	}
	if out, err := dlq("redrive", "workers", "--dry-run"); err != nil || !strings.Contains(out, "would send dlq.jobs/0@0 to jobs/0") {
		t.Fatalf("floe dlq redrive --dry-run: %v\n%s", err, out)
	}
	if out, err := dlq("redrive", "workers"); err != nil || !strings.Contains(out, "redrove 1 dead letters of group workers from dlq.jobs") {
		t.Fatalf("floe dlq redrive: %v\n%s", err, out)
	}
	if out, err := dlq("replay", "workers"); err != nil || !strings.Contains(out, "redrove 0 dead letters") {
		t.Fatalf("a second redrive: %v\n%s", err, out)
	}

	rd, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"jobs": {0: kgo.NewOffset().At(3)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var back *kgo.Record
	for back == nil && ctx.Err() == nil {
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) { back = r })
	}
	if back == nil || string(back.Key) != "kb" || string(back.Value) != "b" || len(back.Headers) != 1 || back.Headers[0].Key != "trace" {
		t.Fatalf("redriven record %+v, want key kb, value b and only its trace header", back)
	}

	// With errors.deadletterqueue.copy.record.enable=false a dead letter
	// holds no record: redrive names it and skips it.
	c.Name, c.Value = "errors.deadletterqueue.copy.record.enable", kmsg.StringPtr("false")
	req.Resources[0].Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{c}
	if resp, err := req.RequestWith(ctx, admin); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("turn the record copy off: %v %+v", err, resp)
	}
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "jobs", Key: []byte("kd"), Value: []byte("d")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for rejected := false; !rejected && ctx.Err() == nil; {
		sc.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "d" {
				r.Ack(kgo.AckReject)
				rejected = true
				return
			}
			r.Ack(kgo.AckAccept)
		})
		sc.FlushAcks(ctx)
	}
	for ctx.Err() == nil {
		if out, err = dlq("list", "workers"); err == nil && strings.Contains(out, "2 dead letters of group workers in dlq.jobs") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out, err := dlq("redrive", "workers"); err != nil || !strings.Contains(out, "skipped dlq.jobs/0@1: no copy of the record") ||
		!strings.Contains(out, "it was jobs/0@4") || !strings.Contains(out, "redrove 0 dead letters") {
		t.Fatalf("redrive of a dead letter without its record: %v\n%s", err, out)
	}
}

// containsFieldsPrefix reports whether some line of out starts with the
// whitespace-separated fields of want.
func containsFieldsPrefix(out, want string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.Join(strings.Fields(line), " "), want) {
			return true
		}
	}
	return false
}
