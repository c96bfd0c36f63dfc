package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// topicReadyTimeout bounds waiting for a new topic's partitions to have
// leaders.
const topicReadyTimeout = 30 * time.Second

// RunKafka runs one benchmark against a Kafka-protocol broker and returns
// its figures. An error means the run could not start or was cut short;
// errors of individual messages are counted in the Result instead (see
// Result.Err).
func RunKafka(ctx context.Context, cfg KafkaConfig) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// A short metadata age: kadm answers from the client's metadata cache,
	// and waiting for a new topic's leaders must see fresh metadata.
	admClient, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.ClientID("floe-bench-admin"),
		kgo.MetadataMinAge(50 * time.Millisecond)}, cfg.ClientOpts...)...)
	if err != nil {
		return nil, err
	}
	defer admClient.Close()
	adm := kadm.NewClient(admClient)
	partitions, err := ensureTopic(ctx, adm, &cfg)
	if err != nil {
		return nil, err
	}
	r := &kafkaRun{cfg: &cfg, adm: adm, partitions: partitions}
	res := &Result{Tool: "kafka", Mode: cfg.Mode, Label: cfg.Label, OfferedPerSec: cfg.RatePerSec, MessageBytes: cfg.MessageBytes, Kafka: &cfg}
	switch cfg.Mode {
	case ModeConsume:
		res.Consume, err = r.consumeExisting(ctx)
	default:
		res.Produce, res.Consume, err = r.produce(ctx, res)
	}
	return res, err
}

// ensureTopic finds (or creates) the topic, waits until every partition
// has a leader, and returns its sorted partition ids.
func ensureTopic(ctx context.Context, adm *kadm.Client, cfg *KafkaConfig) ([]int32, error) {
	deadline := time.Now().Add(topicReadyTimeout)
	created := false
	for {
		topics, err := adm.ListTopics(ctx, cfg.Topic)
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		td, ok := topics[cfg.Topic]
		switch {
		case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
			if !cfg.CreateTopic {
				return nil, fmt.Errorf("topic %q does not exist", cfg.Topic)
			}
			if !created {
				resp, err := adm.CreateTopic(ctx, cfg.Partitions, cfg.ReplicationFactor, nil, cfg.Topic)
				if err == nil && resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
					err = resp.Err
				}
				if err != nil {
					return nil, fmt.Errorf("create topic %q (%d partitions, RF %d): %w", cfg.Topic, cfg.Partitions, cfg.ReplicationFactor, err)
				}
				created = true
			}
		case td.Err != nil && !errors.Is(td.Err, kerr.LeaderNotAvailable):
			return nil, fmt.Errorf("topic %q: %w", cfg.Topic, td.Err)
		case td.Err == nil && len(td.Partitions) > 0 && allHaveLeaders(td.Partitions):
			return td.Partitions.Numbers(), nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("topic %q: partitions without a leader after %v", cfg.Topic, topicReadyTimeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func allHaveLeaders(ps kadm.PartitionDetails) bool {
	for _, p := range ps {
		if p.Err != nil || p.Leader < 0 {
			return false
		}
	}
	return true
}

// kafkaRun is the state shared by the goroutines of one run.
type kafkaRun struct {
	cfg        *KafkaConfig
	adm        *kadm.Client
	partitions []int32

	stages  *clientStages
	claimed atomic.Int64 // messages handed to producers (count mode)
	sent    atomic.Int64 // messages given to the client
}

// claim reserves one message of the count; false once the count is spent.
func (r *kafkaRun) claim() bool {
	return r.cfg.Count == 0 || r.claimed.Add(1) <= r.cfg.Count
}

// produce runs the producers (and in e2e the consumers) and returns the
// produce side and, in e2e, the consume side.
func (r *kafkaRun) produce(ctx context.Context, res *Result) (*Side, *Side, error) {
	var from map[int32]int64
	if r.cfg.Mode == ModeE2E {
		ends, err := r.offsets(ctx, r.adm.ListEndOffsets)
		if err != nil {
			return nil, nil, err
		}
		from = ends
	}
	r.stages = &clientStages{} // its warmup end is set below, before any produce
	clients := make([]*kgo.Client, r.cfg.Producers)
	for i := range clients {
		cl, err := kgo.NewClient(append(r.cfg.producerOpts(), kgo.WithHooks(r.stages.hook()))...)
		if err != nil {
			closeAll(clients)
			return nil, nil, err
		}
		clients[i] = cl
	}
	defer closeAll(clients)

	start := time.Now()
	warmupEnd := start.Add(r.cfg.Warmup)
	r.stages.warmupEndNs = warmupEnd.UnixNano()
	acks := newMeter(warmupEnd, warmupEnd)
	meters := []namedMeter{{"produce", acks}}
	var consumed *meter
	var consumers *consumerGroup
	if from != nil {
		consumed = newMeter(warmupEnd, warmupEnd)
		meters = append(meters, namedMeter{"consume", consumed})
		var err error
		if consumers, err = r.startConsumers(ctx, from, nil, consumed, 0); err != nil {
			return nil, nil, err
		}
	}
	progressCtx, stopProgress := context.WithCancel(ctx)
	defer stopProgress()
	go printProgress(progressCtx, r.cfg.Progress, r.cfg.ProgressInterval, start, meters...)

	var wg sync.WaitGroup
	for i, cl := range clients {
		wg.Go(func() { r.produceLoop(ctx, cl, i, start, acks) })
	}
	stagesBefore := r.scrapeStagesAt(ctx, warmupEnd)
	wg.Wait()
	r.flush(ctx, clients, acks)
	r.brokerStages(ctx, stagesBefore, res)
	res.ClientStages = r.stages.latencies()
	if consumers != nil {
		consumers.drain(acks.allMsgs.Load(), r.cfg.DrainTimeout)
		stopProgress()
		if err := consumers.wait(); err != nil {
			return nil, nil, err
		}
	}
	stopProgress()
	produceSide := acks.side(r.cfg.Acks != "0")
	if consumed == nil {
		return produceSide, nil, ctx.Err()
	}
	return produceSide, consumed.side(true), ctx.Err()
}

// scrapeStagesAt scrapes the brokers' stage histograms at t (the end of
// the warmup), in the background; nil when no broker metrics were asked for.
func (r *kafkaRun) scrapeStagesAt(ctx context.Context, t time.Time) <-chan stagesScrape {
	if len(r.cfg.BrokerMetrics) == 0 {
		return nil
	}
	ch := make(chan stagesScrape, 1)
	go func() {
		select {
		case <-time.After(time.Until(t)):
		case <-ctx.Done():
		}
		s, err := scrapeStages(ctx, r.cfg.BrokerMetrics)
		ch <- stagesScrape{s, err}
	}()
	return ch
}

type stagesScrape struct {
	s   *stageSnapshot
	err error
}

// brokerStages scrapes again and puts the difference into res.
func (r *kafkaRun) brokerStages(ctx context.Context, before <-chan stagesScrape, res *Result) {
	if before == nil {
		return
	}
	b := <-before
	if b.err != nil {
		res.StagesError = b.err.Error()
		return
	}
	after, err := scrapeStages(ctx, r.cfg.BrokerMetrics)
	if err != nil {
		res.StagesError = err.Error()
		return
	}
	res.BrokerStages = after.since(b.s).latencies()
	if len(res.BrokerStages) == 0 {
		res.StagesError = "no " + stageMetric + " observations (not a Floe broker, or --produce-stage-sample 0)"
	}
}

// flush waits up to DrainTimeout for every buffered message's outcome;
// messages still unacknowledged then count as errors.
func (r *kafkaRun) flush(ctx context.Context, clients []*kgo.Client, acks *meter) {
	flushCtx, cancel := context.WithTimeout(ctx, r.cfg.DrainTimeout)
	defer cancel()
	for _, cl := range clients {
		if err := cl.Flush(flushCtx); err != nil {
			break
		}
	}
	if missing := r.sent.Load() - acks.allMsgs.Load() - acks.errors.Load(); missing > 0 {
		acks.errors.Add(missing - 1)
		acks.fail(fmt.Errorf("%d messages without an outcome after the %v drain timeout", missing, r.cfg.DrainTimeout))
	}
}

func closeAll(clients []*kgo.Client) {
	for _, cl := range clients {
		if cl != nil {
			cl.Close()
		}
	}
}

// offsets lists one offset per partition of the topic (start or end).
func (r *kafkaRun) offsets(ctx context.Context, list func(context.Context, ...string) (kadm.ListedOffsets, error)) (map[int32]int64, error) {
	listed, err := list(ctx, r.cfg.Topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("list offsets of %q: %w", r.cfg.Topic, err)
	}
	out := make(map[int32]int64, len(r.partitions))
	for _, p := range r.partitions {
		lo, ok := listed.Lookup(r.cfg.Topic, p)
		if !ok {
			return nil, fmt.Errorf("list offsets of %q: partition %d missing", r.cfg.Topic, p)
		}
		out[p] = lo.Offset
	}
	return out, nil
}

// assign splits the partitions round-robin over n consumers; consumers
// beyond the partition count get none and are not started.
func assign(partitions []int32, n int) [][]int32 {
	n = min(n, len(partitions))
	out := make([][]int32, n)
	sorted := slices.Clone(partitions)
	slices.Sort(sorted)
	for i, p := range sorted {
		out[i%n] = append(out[i%n], p)
	}
	return out
}
