package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Modes of a Kafka run.
const (
	ModeProduce = "produce" // producers only: throughput and ack latency
	ModeConsume = "consume" // consumers only: read what the topic holds
	ModeE2E     = "e2e"     // both at once: also end-to-end latency
)

// messageBytesMax bounds --size: far above any sane benchmark, far below
// what would exhaust memory with a full producer buffer.
const messageBytesMax = 16 << 20

// KafkaConfig is one `floe bench produce|consume|e2e` run. The zero value
// is not valid: the command fills defaults, Validate checks.
type KafkaConfig struct {
	Mode    string   `json:"mode"`
	Brokers []string `json:"brokers"`
	Topic   string   `json:"topic"`
	// CreateTopic creates a missing topic with Partitions and
	// ReplicationFactor; an existing topic is used as it is.
	CreateTopic       bool  `json:"create_topic"`
	Partitions        int32 `json:"partitions"`
	ReplicationFactor int16 `json:"replication_factor"`

	MessageBytes int   `json:"message_bytes"`
	Count        int64 `json:"count"` // total messages over all producers (or to consume); 0: use Duration
	// Duration bounds the producing; with Count 0 it is the run length.
	Duration time.Duration `json:"duration_ns"`
	// Warmup is excluded from the figures (not from the run).
	Warmup    time.Duration `json:"warmup_ns"`
	Producers int           `json:"producers"`
	Consumers int           `json:"consumers"`
	// RatePerSec > 0 is open loop: that many messages per second over all
	// producers, on schedule, latency counted from the scheduled time.
	RatePerSec float64 `json:"rate_per_sec"`

	Acks               string        `json:"acks"`        // 0, 1 or all
	Compression        string        `json:"compression"` // none, gzip, snappy, lz4, zstd
	Linger             time.Duration `json:"linger_ns"`
	BatchBytesMax      int32         `json:"batch_bytes_max"`      // 0: client default (1 MB)
	Idempotent         bool          `json:"idempotent"`           // needs acks=all
	MaxInFlight        int           `json:"max_in_flight"`        // per broker, non-idempotent only; 0: client default
	MaxBufferedRecords int           `json:"max_buffered_records"` // per producer; 0: client default
	FetchMaxWait       time.Duration `json:"fetch_max_wait_ns"`    // 0: client default
	// DrainTimeout bounds waiting for the last acknowledgements and, in
	// e2e, for consumers to catch up, after producing stops.
	DrainTimeout time.Duration `json:"drain_timeout_ns"`
	Label        string        `json:"label,omitempty"`
	// BrokerMetrics are Floe brokers' admin addresses (host:port, or the
	// full /metrics URL): when set, the run reports the brokers' produce
	// stage histograms over the measured part (stages.go).
	BrokerMetrics []string `json:"broker_metrics,omitempty"`

	// ClientOpts are added to every client's options (TLS and SASL, from
	// floe bench --command-config).
	ClientOpts []kgo.Opt `json:"-"`

	// Progress receives a progress line every ProgressInterval; nil for none.
	Progress         io.Writer     `json:"-"`
	ProgressInterval time.Duration `json:"-"`
}

var compressionCodecs = map[string]kgo.CompressionCodec{
	"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
	"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
}

var acksByName = map[string]kgo.Acks{"0": kgo.NoAck(), "1": kgo.LeaderAck(), "all": kgo.AllISRAcks(), "-1": kgo.AllISRAcks()}

// Validate reports the first setting that cannot run.
func (c *KafkaConfig) Validate() error {
	producing := c.Mode == ModeProduce || c.Mode == ModeE2E
	consuming := c.Mode == ModeConsume || c.Mode == ModeE2E
	switch {
	case !producing && !consuming:
		return fmt.Errorf("mode %q: want produce, consume or e2e", c.Mode)
	case len(c.Brokers) == 0 || slices.Contains(c.Brokers, ""):
		return errors.New("no brokers")
	case c.Topic == "":
		return errors.New("no topic")
	case c.CreateTopic && (c.Partitions < 1 || c.ReplicationFactor < 1):
		return fmt.Errorf("partitions %d, replication factor %d: both must be >= 1", c.Partitions, c.ReplicationFactor)
	case c.MessageBytes < 0 || c.MessageBytes > messageBytesMax:
		return fmt.Errorf("message size %d: want 0..%d", c.MessageBytes, messageBytesMax)
	case c.Count < 0 || c.Duration < 0 || c.Warmup < 0 || c.DrainTimeout < 0 || c.Linger < 0 || c.FetchMaxWait < 0:
		return errors.New("count and durations must not be negative")
	case producing && c.Count == 0 && c.Duration == 0:
		return errors.New("need a count or a duration")
	case producing && c.Producers < 1, consuming && c.Consumers < 1:
		return fmt.Errorf("producers %d, consumers %d: mode %s needs at least one", c.Producers, c.Consumers, c.Mode)
	case c.RatePerSec < 0 || math.IsNaN(c.RatePerSec) || math.IsInf(c.RatePerSec, 0):
		return fmt.Errorf("rate %v: want >= 0 msg/s", c.RatePerSec)
	case c.BatchBytesMax < 0 || c.MaxBufferedRecords < 0 || c.MaxInFlight < 0:
		return errors.New("batch size, buffered records and in-flight limits must not be negative")
	}
	if !producing {
		return nil
	}
	if _, ok := acksByName[c.Acks]; !ok {
		return fmt.Errorf("acks %q: want 0, 1 or all", c.Acks)
	}
	if _, ok := compressionCodecs[c.Compression]; !ok {
		return fmt.Errorf("compression %q: want none, gzip, snappy, lz4 or zstd", c.Compression)
	}
	if c.Idempotent && acksByName[c.Acks] != kgo.AllISRAcks() {
		return errors.New("an idempotent producer needs acks=all")
	}
	if c.Idempotent && c.MaxInFlight > 0 {
		return errors.New("max in flight is fixed (5) for an idempotent producer: disable idempotence to set it")
	}
	return nil
}

// producerOpts are the kgo options of one producer client.
func (c *KafkaConfig) producerOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.DefaultProduceTopic(c.Topic),
		kgo.ClientID("floe-bench"),
		kgo.RequiredAcks(acksByName[c.Acks]),
		kgo.ProducerBatchCompression(compressionCodecs[c.Compression]),
		kgo.ProducerLinger(c.Linger),
	}
	opts = append(opts, c.ClientOpts...)
	if c.BatchBytesMax > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(c.BatchBytesMax))
	}
	if c.MaxBufferedRecords > 0 {
		opts = append(opts, kgo.MaxBufferedRecords(c.MaxBufferedRecords))
	}
	if !c.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
		if c.MaxInFlight > 0 {
			opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(c.MaxInFlight))
		}
	}
	return opts
}

// consumerOpts are the kgo options of a consumer reading the given
// partitions from the given offsets.
func (c *KafkaConfig) consumerOpts(from map[int32]int64) []kgo.Opt {
	offsets := make(map[int32]kgo.Offset, len(from))
	for p, o := range from {
		offsets[p] = kgo.NewOffset().At(o)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.ClientID("floe-bench"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.Topic: offsets}),
	}
	opts = append(opts, c.ClientOpts...)
	if c.FetchMaxWait > 0 {
		opts = append(opts, kgo.FetchMaxWait(c.FetchMaxWait))
	}
	return opts
}
