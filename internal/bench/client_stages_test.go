package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// stageCounts maps each reported client stage to its count.
func stageCounts(stages []StageLatency) map[string]uint64 {
	out := make(map[string]uint64, len(stages))
	for _, s := range stages {
		out[s.Stage] = s.Count
	}
	return out
}

func TestClientStagesCountOnlyTheMeasuredPart(t *testing.T) {
	c := &clientStages{warmupEndNs: 1000}
	c.sent(500, 700)   // scheduled in the warmup: not counted
	c.sent(1500, 1700) // 200 ns late
	c.sent(2000, 1990) // a clock step backwards counts as on time, not negative
	if n, maxNs := c.sendLagNs.Count(), c.sendLagNs.Max(); n != 2 || maxNs != 200 {
		t.Fatalf("send lag: %d recorded, max %d ns; want 2, max 200", n, maxNs)
	}
	h := c.hook().(kgo.HookBrokerE2E)
	ok := kgo.BrokerE2E{WriteWait: 3 * time.Microsecond, TimeToWrite: 5 * time.Microsecond, ReadWait: 7 * time.Microsecond}
	h.OnBrokerE2E(kgo.BrokerMetadata{}, produceKey, ok)
	h.OnBrokerE2E(kgo.BrokerMetadata{}, 3, ok) // Metadata, not a produce
	h.OnBrokerE2E(kgo.BrokerMetadata{}, produceKey, kgo.BrokerE2E{ReadErr: errors.New("reset")})
	if c.requestNs.Count() != 1 || c.requestNs.Max() != int64(12*time.Microsecond) ||
		c.reqWaitNs.Count() != 1 || c.reqWaitNs.Max() != int64(3*time.Microsecond) {
		t.Fatalf("request %d (max %d), request_wait %d (max %d): want one successful produce, 12µs and 3µs",
			c.requestNs.Count(), c.requestNs.Max(), c.reqWaitNs.Count(), c.reqWaitNs.Max())
	}
	got := stageCounts(c.latencies())
	if len(got) != 3 || got["send_lag"] != 2 || got["request_wait"] != 1 || got["request"] != 1 {
		t.Fatalf("stages %v: from_send has nothing and must be left out", got)
	}
}

func TestSendStampSitsAfterTheStamp(t *testing.T) {
	v := newPayload(16)
	putStamp(v, 111)
	putSendStamp(v, 222)
	if s, _ := stampOf(v, nil); s != 111 {
		t.Fatalf("the scheduled stamp was overwritten: %d", s)
	}
	if s, ok := sendStampOf(v); !ok || s != 222 {
		t.Fatalf("send stamp %d, %v; want 222", s, ok)
	}
	short := newPayload(15)
	before := string(short)
	putSendStamp(short, 222)
	if _, ok := sendStampOf(short); ok || string(short) != before {
		t.Fatal("a value too short for the send stamp was written to or read from")
	}
}

// sampledAbout reports whether got is what timing one message in
// clientStageEvery of each producer's n gives: within one per producer of
// n/clientStageEvery.
func sampledAbout(got uint64, n int64, producers int) bool {
	want := n / clientStageEvery
	return int64(got) >= want-int64(producers) && int64(got) <= want+int64(producers)
}

func TestOpenLoopReportsClientStages(t *testing.T) {
	c := newFake(t)
	cfg := baseConfig(c, ModeProduce, "client-stages")
	cfg.Count = 0
	cfg.Warmup = 100 * time.Millisecond
	cfg.Duration = 500 * time.Millisecond
	cfg.RatePerSec = 2000
	res := run(t, cfg)
	got := stageCounts(res.ClientStages)
	// The timed messages scheduled after the warmup were each sent
	// (send_lag) and acknowledged (from_send): the same messages; and the
	// acknowledgements came in requests.
	n := res.Produce.Messages
	if n == 0 || got["send_lag"] != got["from_send"] || !sampledAbout(got["from_send"], n, cfg.Producers) ||
		got["request"] == 0 || got["request"] > uint64(n) || got["request_wait"] != got["request"] {
		t.Fatalf("client stages %v for %d measured messages", got, n)
	}
}

func TestClosedLoopHasNoSendLag(t *testing.T) {
	c := newFake(t)
	cfg := baseConfig(c, ModeProduce, "closed")
	res := run(t, cfg)
	got := stageCounts(res.ClientStages)
	if _, ok := got["send_lag"]; ok || !sampledAbout(got["from_send"], res.Produce.Messages, cfg.Producers) || got["request"] == 0 {
		t.Fatalf("closed loop client stages %v for %d messages: want no send_lag, from_send for one in %d",
			got, res.Produce.Messages, clientStageEvery)
	}
}

// TestRecordCreateTimeIsTheSendStamp: the bench sets each record's
// timestamp to its (scheduled) send time itself, so the client does not
// read the clock again for every record; the broker stores it as the
// record's CreateTime, to the millisecond.
func TestRecordCreateTimeIsTheSendStamp(t *testing.T) {
	c := newFake(t)
	cfg := baseConfig(c, ModeProduce, "create-time")
	cfg.RatePerSec = 100_000 // open loop: sent late by scheduling, so a clock read at Produce would differ
	res := run(t, cfg)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("create-time"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var seen, differ int64
	for seen < res.Produce.Messages && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			seen++
			if stamp, ok := recordStamp(r); !ok || r.Timestamp.UnixMilli() != time.Unix(0, stamp).UnixMilli() {
				differ++
			}
		})
	}
	if seen != res.Produce.Messages || differ != 0 {
		t.Fatalf("read %d of %d records; %d with a CreateTime other than their send stamp", seen, res.Produce.Messages, differ)
	}
}
