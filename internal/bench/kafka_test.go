package bench

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newFake(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func baseConfig(c *kfake.Cluster, mode, topic string) KafkaConfig {
	return KafkaConfig{
		Mode: mode, Brokers: c.ListenAddrs(), Topic: topic, CreateTopic: true, Partitions: 3, ReplicationFactor: 1,
		MessageBytes: 100, Count: 2000, Producers: 2, Consumers: 2, Acks: "all", Compression: "none",
		Linger: time.Millisecond, Idempotent: true, DrainTimeout: 30 * time.Second,
	}
}

func run(t *testing.T, cfg KafkaConfig) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := RunKafka(ctx, cfg)
	if err != nil {
		t.Fatalf("RunKafka(%s): %v", cfg.Mode, err)
	}
	if err := res.Err(); err != nil {
		t.Fatalf("result: %v", err)
	}
	return res
}

func TestProduceCountsEveryAckAndMeasuresLatency(t *testing.T) {
	c := newFake(t)
	res := run(t, baseConfig(c, ModeProduce, "produce"))
	p := res.Produce
	if p.Messages != 2000 || p.Bytes != 2000*100 || p.Errors != 0 {
		t.Fatalf("produce side %+v, want 2000 msgs of 100 bytes", p)
	}
	if p.Latency == nil || p.Latency.Count != 2000 || p.Latency.MaxMs <= 0 || p.Latency.P50Ms > p.Latency.P99Ms {
		t.Fatalf("latency %+v", p.Latency)
	}
	if res.Consume != nil {
		t.Fatal("produce mode must not report a consume side")
	}
	// What was acknowledged is what the topic holds.
	cons := baseConfig(c, ModeConsume, "produce")
	got := run(t, cons).Consume
	if got.Messages != 2000 || got.Bytes != 2000*100 {
		t.Fatalf("consumed %d msgs / %d bytes back, want 2000 / 200000", got.Messages, got.Bytes)
	}
}

func TestE2EConsumesEverythingProduced(t *testing.T) {
	c := newFake(t)
	// A topic that already holds data: e2e must start at its end and not
	// count the old messages.
	pre := baseConfig(c, ModeProduce, "e2e")
	pre.Count = 500
	run(t, pre)
	cfg := baseConfig(c, ModeE2E, "e2e")
	cfg.Consumers = 5 // more consumers than partitions: the extra ones idle
	res := run(t, cfg)
	if res.Produce.Messages != 2000 || res.Consume.Messages != 2000 {
		t.Fatalf("produced %d, consumed %d, want 2000 each", res.Produce.Messages, res.Consume.Messages)
	}
	e2e := res.Consume.Latency
	if e2e == nil || e2e.Count != 2000 {
		t.Fatalf("e2e latency %+v", e2e)
	}
	// A message is consumed after it is sent, so end-to-end latency is
	// never below zero (a stamp read from the wrong bytes would be).
	if e2e.P50Ms < 0 || e2e.MaxMs < e2e.P999Ms {
		t.Fatalf("e2e latency %+v", e2e)
	}
}

func TestTinyMessagesCarryTheStampInAHeader(t *testing.T) {
	c := newFake(t)
	cfg := baseConfig(c, ModeE2E, "tiny")
	cfg.MessageBytes = 3
	cfg.Count = 300
	res := run(t, cfg)
	if res.Consume.Messages != 300 || res.Consume.Bytes != 900 || res.Consume.Latency == nil {
		t.Fatalf("consume side %+v", res.Consume)
	}
	// The stamp is a real recent time, so latency is small, not decades.
	if res.Consume.Latency.MaxMs > float64(time.Hour/time.Millisecond) {
		t.Fatalf("latency %v ms: the stamp was not read back", res.Consume.Latency.MaxMs)
	}
}

func TestProduceLatencyIncludesBrokerDelay(t *testing.T) {
	c := newFake(t)
	const delay = 40 * time.Millisecond
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		time.Sleep(delay) // every produce request answered no sooner than this
		return nil, nil, false
	})
	cfg := baseConfig(c, ModeProduce, "slow")
	cfg.Count = 200
	res := run(t, cfg)
	if got := res.Produce.Latency; got.P50Ms < float64(delay/time.Millisecond) {
		t.Fatalf("p50 ack latency %.2f ms below the broker's injected %v delay", got.P50Ms, delay)
	}
}

func TestProduceOptionVariants(t *testing.T) {
	c := newFake(t)
	for _, v := range []struct {
		name        string
		acks, codec string
		idempotent  bool
		inFlight    int
		rate        float64
	}{
		{"acks1-lz4-inflight", "1", "lz4", false, 3, 0},
		{"acks0-zstd", "0", "zstd", false, 0, 0},
		{"gzip", "all", "gzip", true, 0, 0},
		{"snappy-open-loop", "all", "snappy", false, 0, 20000},
	} {
		t.Run(v.name, func(t *testing.T) {
			cfg := baseConfig(c, ModeProduce, "opt-"+v.name)
			cfg.Acks, cfg.Compression, cfg.Idempotent, cfg.MaxInFlight, cfg.RatePerSec = v.acks, v.codec, v.idempotent, v.inFlight, v.rate
			cfg.Count = 1000
			res := run(t, cfg)
			if res.Produce.Messages != 1000 {
				t.Fatalf("%d acknowledged, want 1000", res.Produce.Messages)
			}
			if (v.acks == "0") != (res.Produce.Latency == nil) {
				t.Fatalf("latency %+v: want none exactly for acks=0", res.Produce.Latency)
			}
			if v.acks == "0" {
				// Nothing was acknowledged: the last requests may still be
				// on their way into the broker when produce returns.
				waitEndOffsets(t, c, "opt-"+v.name, 1000)
			}
			got := run(t, baseConfig(c, ModeConsume, "opt-"+v.name)).Consume.Messages
			if got != 1000 {
				t.Fatalf("read back %d, want 1000", got)
			}
		})
	}
}

// waitEndOffsets waits, up to 20 s, until topic's partitions end at want
// records in all.
func waitEndOffsets(t *testing.T, c *kfake.Cluster, topic string, want int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(20 * time.Second)
	var total int64
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ends, err := adm.ListEndOffsets(ctx, topic)
		cancel()
		total = 0
		ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
		if err == nil && total >= want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s holds %d records after 20s, want %d", topic, total, want)
}

func TestDurationModeWithWarmup(t *testing.T) {
	c := newFake(t)
	cfg := baseConfig(c, ModeE2E, "timed")
	cfg.Count = 0
	cfg.Warmup = 200 * time.Millisecond
	cfg.Duration = 300 * time.Millisecond
	cfg.RatePerSec = 2000
	progress := &syncWriter{}
	cfg.Progress, cfg.ProgressInterval = progress, 100*time.Millisecond
	res := run(t, cfg)
	// At 2000 msg/s, about 600 messages fall after the warmup; the exact
	// number depends on scheduling at the edges, never exceeding the plan.
	if n := res.Produce.Messages; n == 0 || n > 601 {
		t.Fatalf("%d messages measured after the warmup, want 1..601", n)
	}
	if res.Consume.Messages != res.Produce.Messages {
		t.Fatalf("consumed %d of %d measured", res.Consume.Messages, res.Produce.Messages)
	}
	if !strings.Contains(progress.String(), "produce") {
		t.Fatalf("no progress line: %q", progress.String())
	}
}

func TestConsumeEmptyTopicMeasuresNothing(t *testing.T) {
	c := newFake(t)
	res, err := RunKafka(context.Background(), baseConfig(c, ModeConsume, "empty"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Consume.Messages != 0 || res.Err() == nil {
		t.Fatalf("empty topic: %+v, err %v; want 0 messages and an error", res.Consume, res.Err())
	}
}

func TestMissingTopicWithoutCreate(t *testing.T) {
	c := newFake(t)
	cfg := baseConfig(c, ModeProduce, "absent")
	cfg.CreateTopic = false
	if _, err := RunKafka(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("err %v, want 'does not exist'", err)
	}
}

func TestValidateRejectsBadSettings(t *testing.T) {
	good := KafkaConfig{Mode: ModeE2E, Brokers: []string{"x:1"}, Topic: "t", CreateTopic: true, Partitions: 1,
		ReplicationFactor: 1, MessageBytes: 100, Count: 1, Producers: 1, Consumers: 1, Acks: "all", Compression: "none", Idempotent: true}
	if err := good.Validate(); err != nil {
		t.Fatalf("good config rejected: %v", err)
	}
	for name, mutate := range map[string]func(*KafkaConfig){
		"mode":            func(c *KafkaConfig) { c.Mode = "bogus" },
		"no brokers":      func(c *KafkaConfig) { c.Brokers = nil },
		"empty broker":    func(c *KafkaConfig) { c.Brokers = []string{""} },
		"no topic":        func(c *KafkaConfig) { c.Topic = "" },
		"partitions":      func(c *KafkaConfig) { c.Partitions = 0 },
		"rf":              func(c *KafkaConfig) { c.ReplicationFactor = 0 },
		"size":            func(c *KafkaConfig) { c.MessageBytes = -1 },
		"huge size":       func(c *KafkaConfig) { c.MessageBytes = messageBytesMax + 1 },
		"no end":          func(c *KafkaConfig) { c.Count = 0 },
		"negative count":  func(c *KafkaConfig) { c.Count = -1 },
		"producers":       func(c *KafkaConfig) { c.Producers = 0 },
		"consumers":       func(c *KafkaConfig) { c.Consumers = 0 },
		"rate":            func(c *KafkaConfig) { c.RatePerSec = -5 },
		"acks":            func(c *KafkaConfig) { c.Acks = "2" },
		"codec":           func(c *KafkaConfig) { c.Compression = "brotli" },
		"idempotent acks": func(c *KafkaConfig) { c.Acks = "1" },
		"inflight":        func(c *KafkaConfig) { c.MaxInFlight = 3 },
		"linger":          func(c *KafkaConfig) { c.Linger = -time.Second },
	} {
		c := good
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted %+v", name, c)
		}
		if _, err := RunKafka(context.Background(), c); err == nil {
			t.Errorf("%s: RunKafka ran", name)
		}
	}
}

// syncWriter lets the progress goroutine and the test share a buffer.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
