package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/floe-broker/floe/internal/bench"
)

func init() {
	addCommand("bench", "load-test a Kafka-protocol broker or NATS JetStream", runBench)
}

const benchUsage = `usage: floe bench <mode> [flags]

modes:
  produce       producers only: throughput and produce (ack) latency
  consume       consumers only: read what the topic holds now
  e2e           producers and consumers at once: also end-to-end latency
  nats-produce  JetStream publishes with acks (async, windowed)
  rr            request/reply round trips (package reqreply): p50/p99/p99.9
                at each --concurrency, at least once or --transactional-id
  startup       start floe serve on a data directory, time /readyz and the
                first acknowledged produce, kill it; repeat (--runs)

Run 'floe bench <mode> -h' for a mode's flags. Every flag can also come from
FLOE_<NAME> or a --config file, as for floe serve.
`

func runBench(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(os.Stderr, benchUsage)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	switch mode := args[0]; mode {
	case bench.ModeProduce, bench.ModeConsume, bench.ModeE2E:
		return runKafkaBench(ctx, mode, args[1:], os.Stdout)
	case "nats-produce":
		return runNATSBench(ctx, args[1:], os.Stdout)
	case "rr":
		return runRRBench(ctx, args[1:], os.Stdout)
	case "startup":
		return runStartupBench(ctx, args[1:], os.Stdout)
	default:
		fmt.Fprintf(os.Stderr, "floe bench: unknown mode %q\n\n%s", mode, benchUsage)
		return errUsage
	}
}

// commonBenchFlags are the flags every mode shares.
type commonBenchFlags struct {
	size       *int
	count      *int64
	duration   *time.Duration
	warmup     *time.Duration
	rate       *float64
	drain      *time.Duration
	label      *string
	jsonOut    *bool
	progress   *time.Duration
	progressTo io.Writer
}

func addCommonBenchFlags(fs *flag.FlagSet) *commonBenchFlags {
	return &commonBenchFlags{
		size:       fs.Int("size", 100, "message value size in bytes"),
		count:      fs.Int64("count", 0, "messages in total (over all producers); 0: run for --duration"),
		duration:   fs.Duration("duration", 0, "how long to produce after the warmup (default 10s when --count is 0)"),
		warmup:     fs.Duration("warmup", 0, "run this long first without counting it"),
		rate:       fs.Float64("rate", 0, "offered load in msg/s over all producers (open loop); 0: as fast as acknowledged"),
		drain:      fs.Duration("drain-timeout", 30*time.Second, "after producing, how long to wait for the last acks (and consumers)"),
		label:      fs.String("label", "", "free-text name of this run, kept in the JSON (e.g. floe-rf3)"),
		jsonOut:    fs.Bool("json", false, "print the result as one JSON object instead of text"),
		progress:   fs.Duration("progress", time.Second, "progress line interval on stderr (0 disables)"),
		progressTo: os.Stderr,
	}
}

func (c *commonBenchFlags) durationOrDefault() time.Duration {
	if *c.count == 0 && *c.duration == 0 {
		return 10 * time.Second
	}
	return *c.duration
}

func runKafkaBench(ctx context.Context, mode string, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("floe bench "+mode, flag.ContinueOnError)
	common := addCommonBenchFlags(fs)
	brokers := fs.String("brokers", "127.0.0.1:9092", "comma-separated seed brokers")
	commandConfig := fs.String("command-config", "", commandConfigUsage)
	topic := fs.String("topic", "floe-bench", "topic to use")
	create := fs.Bool("create-topic", true, "create the topic if it does not exist")
	partitions := fs.Int("partitions", 1, "partitions of a created topic")
	rf := fs.Int("replication-factor", 1, "replication factor of a created topic")
	producers := fs.Int("producers", 1, "producer clients (each its own connections)")
	consumers := fs.Int("consumers", 1, "consumer clients; partitions are split among them")
	acks := fs.String("acks", "all", "0, 1 or all")
	compression := fs.String("compression", "none", "none, gzip, snappy, lz4 or zstd")
	linger := fs.Duration("linger", time.Millisecond, "how long a partition's batch waits for more records")
	batchMax := fs.Int("batch-max-bytes", 0, "largest record batch (0: client default, 1 MB)")
	idempotent := fs.String("idempotent", "auto", "true, false, or auto (true with acks=all)")
	inFlight := fs.Int("max-in-flight", 0, "produce requests in flight per broker, non-idempotent only (0: client default)")
	buffered := fs.Int("max-buffered", 0, "records a producer buffers before blocking (0: client default, 50000)")
	fetchWait := fs.Duration("fetch-max-wait", 0, "longest a fetch waits for data (0: client default)")
	brokerMetrics := fs.String("broker-metrics", "", "Floe brokers' admin addresses `host:port,...`: report their produce stage histograms (floe_produce_stage_seconds) over the measured part")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	idem, err := parseIdempotent(*idempotent, *acks)
	if err != nil {
		return err
	}
	security, err := commandConfigOpts(*commandConfig)
	if err != nil {
		return err
	}
	if *partitions > 1<<20 || *rf > 1<<10 || *batchMax > 1<<30 {
		return errors.New("--partitions, --replication-factor or --batch-max-bytes out of range")
	}
	cfg := bench.KafkaConfig{
		Mode: mode, Brokers: splitList(*brokers), Topic: *topic, CreateTopic: *create,
		Partitions: int32(*partitions), ReplicationFactor: int16(*rf),
		MessageBytes: *common.size, Count: *common.count, Duration: common.durationOrDefault(),
		Warmup: *common.warmup, Producers: *producers, Consumers: *consumers, RatePerSec: *common.rate,
		Acks: *acks, Compression: *compression, Linger: *linger, BatchBytesMax: int32(*batchMax),
		Idempotent: idem, MaxInFlight: *inFlight, MaxBufferedRecords: *buffered, FetchMaxWait: *fetchWait,
		DrainTimeout: *common.drain, Label: *common.label, BrokerMetrics: splitList(*brokerMetrics),
		Progress: common.progressTo, ProgressInterval: *common.progress, ClientOpts: security,
	}
	if mode == bench.ModeConsume {
		cfg.Duration = *common.duration // consume reads what is there; a duration only bounds it
	}
	res, err := bench.RunKafka(ctx, cfg)
	return reportBench(out, res, err, *common.jsonOut)
}

func parseIdempotent(v, acks string) (bool, error) {
	switch v {
	case "auto":
		return acks == "all" || acks == "-1", nil
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("--idempotent %q: want true, false or auto", v)
}

func runNATSBench(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("floe bench nats-produce", flag.ContinueOnError)
	common := addCommonBenchFlags(fs)
	url := fs.String("nats-url", "nats://127.0.0.1:4222", "comma-separated NATS server URLs")
	stream := fs.String("stream", "floe-bench", "JetStream stream to publish to")
	subject := fs.String("subject", "", "subject the stream captures (default: <stream>.data)")
	replicas := fs.Int("replicas", 1, "stream replicas (R1, R3 needs a 3-node cluster)")
	storage := fs.String("storage", "file", "file or memory")
	recreate := fs.Bool("recreate", true, "delete and recreate the stream first, so it starts empty")
	publishers := fs.Int("publishers", 1, "publisher connections")
	window := fs.Int("window", 1000, "most unacknowledged async publishes per publisher")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *subject == "" {
		*subject = *stream + ".data"
	}
	cfg := bench.NATSConfig{
		URL: *url, Stream: *stream, Subject: *subject, Replicas: *replicas, Storage: *storage, Recreate: *recreate,
		MessageBytes: *common.size, Count: *common.count, Duration: common.durationOrDefault(),
		Warmup: *common.warmup, Publishers: *publishers, RatePerSec: *common.rate, Window: *window,
		DrainTimeout: *common.drain, Label: *common.label,
		Progress: common.progressTo, ProgressInterval: *common.progress,
	}
	res, err := bench.RunNATS(ctx, cfg)
	return reportBench(out, res, err, *common.jsonOut)
}

// reportBench prints a result (even a partial one) and returns the error
// the command exits with: the run's own error, else the result's.
func reportBench(out io.Writer, res *bench.Result, runErr error, jsonOut bool) error {
	if res != nil {
		if jsonOut {
			enc := json.NewEncoder(out)
			if err := enc.Encode(res); err != nil {
				return err
			}
		} else {
			res.WriteText(out)
		}
	}
	if runErr != nil {
		return runErr
	}
	return res.Err()
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
