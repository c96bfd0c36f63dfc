package workload

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floe-broker/floe/jepsen/history"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Workload runs the clients. Start launches them; StopProducers, Drain and
// FinalRead end the run in that order; Close releases the admin client.
type Workload struct {
	cfg    Config
	rec    *history.Recorder
	admin  *kgo.Client
	adm    *kadm.Client
	procs  atomic.Int64 // last process id handed out
	values atomic.Int64 // last value produced
	// txnValues: last transactional value written
	txnValues atomic.Int64
	// txnOffsetSeq: last offset a transaction sent (txnoffsets.go)
	txnOffsetSeq atomic.Int64

	produceStop, consumeStop context.CancelFunc
	producers, consumers     sync.WaitGroup

	mu     sync.Mutex
	polled map[string]map[int32]int64 // group -> partition -> next offset polled
}

// New connects the admin client (lazily: nothing is dialled yet).
func New(cfg Config, rec *history.Recorder) (*Workload, error) {
	cfg.Defaults()
	admin, err := kgo.NewClient(baseOpts(cfg)...)
	if err != nil {
		return nil, err
	}
	return &Workload{cfg: cfg, rec: rec, admin: admin, adm: kadm.NewClient(admin), polled: map[string]map[int32]int64{}}, nil
}

// baseOpts are every client's options: short timeouts so an operation
// against a dead or partitioned broker ends (info) instead of hanging, and
// fresh metadata so clients find new leaders quickly.
func baseOpts(cfg Config) []kgo.Opt {
	return append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.DialTimeout(2 * time.Second),
		kgo.RequestTimeoutOverhead(cfg.OpTimeout / 2),
		kgo.RetryTimeout(cfg.OpTimeout),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.MetadataMaxAge(5 * time.Second),
	}, cfg.ClientOpts...)
}

// producerOpts are baseOpts for a producer writing to topic with acks=all,
// each record to the partition it names and sent at once, plus extra.
func producerOpts(cfg Config, topic string, extra ...kgo.Opt) []kgo.Opt {
	return append(append(baseOpts(cfg),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(cfg.OpTimeout),
		kgo.ProducerLinger(0),
	), extra...)
}

// Close releases the admin client.
func (w *Workload) Close() { w.admin.Close() }

func (w *Workload) newProcess() int64 { return w.procs.Add(1) }

// Setup creates the topics and waits until every partition has a leader,
// or ctx ends.
func (w *Workload) Setup(ctx context.Context) error {
	if err := w.createTopic(ctx, w.cfg.Topic, w.cfg.Partitions); err != nil {
		return err
	}
	if w.cfg.TxnProducers > 0 {
		if err := w.createTopic(ctx, w.cfg.TxnTopic, w.cfg.TxnPartitions); err != nil {
			return err
		}
	}
	return nil
}

// createTopic creates topic and waits until every partition has a leader.
func (w *Workload) createTopic(ctx context.Context, topic string, partitions int32) error {
	for {
		_, err := w.adm.CreateTopic(ctx, partitions, w.cfg.Replication, nil, topic)
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			break
		}
		fmt.Fprintf(w.cfg.Log, "setup: create topic %s: %v\n", topic, err)
		if err := sleep(ctx, time.Second); err != nil {
			return fmt.Errorf("creating topic %s: %w", topic, err)
		}
	}
	for {
		t, err := w.topology(ctx, topic)
		if err == nil && len(t.Leaders) == int(partitions) {
			return nil
		}
		fmt.Fprintf(w.cfg.Log, "setup: waiting for leaders of %s: %v %v\n", topic, t.Leaders, err)
		if err := sleep(ctx, time.Second); err != nil {
			return fmt.Errorf("waiting for partition leaders of %s: %w", topic, err)
		}
	}
}

// Topology is who leads what, from one Metadata request.
type Topology struct {
	Controller int32           // -1 if unknown
	Leaders    map[int32]int32 // partition -> leader broker (partitions with one)
	Brokers    []int32
}

// Topology asks the cluster for the controller and the partition leaders
// (the nemesis aims faults with it).
func (w *Workload) Topology(ctx context.Context) (Topology, error) {
	return w.topology(ctx, w.cfg.Topic)
}

// Coordinators are the transaction coordinators of the transactional
// producers (FindCoordinator key type 1), for the nemesis.
func (w *Workload) Coordinators(ctx context.Context) ([]int32, error) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	var ids []string
	for i := 0; i < w.cfg.TxnProducers; i++ {
		ids = append(ids, txnID(i))
	}
	resp := w.adm.FindTxnCoordinators(ctx, ids...)
	var out []int32
	for _, id := range ids {
		if c, ok := resp[id]; ok && c.Err == nil && c.NodeID >= 0 {
			out = append(out, c.NodeID)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no transaction coordinator found: %v", resp.Error())
	}
	return out, nil
}

func (w *Workload) topology(ctx context.Context, topic string) (Topology, error) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	md, err := w.adm.Metadata(ctx, topic)
	if err != nil {
		return Topology{Controller: -1}, err
	}
	t := Topology{Controller: md.Controller, Leaders: map[int32]int32{}}
	for _, b := range md.Brokers {
		t.Brokers = append(t.Brokers, b.NodeID)
	}
	sort.Slice(t.Brokers, func(i, j int) bool { return t.Brokers[i] < t.Brokers[j] })
	if td, ok := md.Topics[topic]; ok {
		for p, pd := range td.Partitions {
			if pd.Err == nil && pd.Leader >= 0 {
				t.Leaders[p] = pd.Leader
			}
		}
	}
	return t, nil
}

// Start launches every client. They run until StopProducers and Drain.
func (w *Workload) Start(ctx context.Context) {
	pctx, pstop := context.WithCancel(ctx)
	cctx, cstop := context.WithCancel(ctx)
	w.produceStop, w.consumeStop = pstop, cstop
	for i := 0; i < w.cfg.Producers; i++ {
		w.producers.Add(1)
		go func(i int) { defer w.producers.Done(); w.produceLoop(pctx, i) }(i)
	}
	for g := 0; g < w.cfg.Groups; g++ {
		for c := 0; c < w.cfg.Consumers; c++ {
			w.consumers.Add(1)
			go func() { defer w.consumers.Done(); w.consumeLoop(cctx, w.cfg.group(g)) }()
		}
		w.consumers.Add(1)
		go func() { defer w.consumers.Done(); w.offsetLoop(cctx, w.cfg.group(g)) }()
	}
	for i := 0; i < w.cfg.TxnProducers; i++ {
		w.producers.Add(1)
		go func(i int) { defer w.producers.Done(); w.txnLoop(pctx, i) }(i)
	}
	if w.cfg.TxnProducers > 0 {
		for _, iso := range []string{history.ReadCommitted, history.ReadUncommitted} {
			w.consumers.Add(1)
			go func() { defer w.consumers.Done(); w.txnReadLoop(cctx, iso) }()
		}
		w.consumers.Add(1)
		go func() { defer w.consumers.Done(); w.txnOffsetLoop(cctx) }()
	}
	for i := 0; i < w.cfg.Fetchers; i++ {
		w.consumers.Add(1)
		go func(i int) { defer w.consumers.Done(); w.fetchLoop(cctx, i) }(i)
	}
}

// StopProducers stops the producers and waits for their last operations.
func (w *Workload) StopProducers() {
	if w.produceStop != nil {
		w.produceStop()
	}
	w.producers.Wait()
}

// Drain waits until every group has polled up to the end offsets the
// cluster reports now (consumers keep running meanwhile), then stops the
// consumers, offset readers and fetchers. It gives up at ctx's end and
// stops them anyway: values never polled then show up as unseen.
func (w *Workload) Drain(ctx context.Context) error {
	defer func() {
		if w.consumeStop != nil {
			w.consumeStop()
		}
		w.consumers.Wait()
	}()
	var end kadm.ListedOffsets
	for {
		var err error
		if end, err = w.adm.ListEndOffsets(ctx, w.cfg.Topic); err == nil && end.Error() == nil {
			break
		}
		if err := sleep(ctx, time.Second); err != nil {
			return fmt.Errorf("drain: listing end offsets: %w", err)
		}
	}
	for !w.drained(end) {
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return fmt.Errorf("drain: consumers did not reach the end offsets: %w", err)
		}
	}
	return nil
}

func (w *Workload) drained(end kadm.ListedOffsets) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for g := 0; g < w.cfg.Groups; g++ {
		for p, lo := range end[w.cfg.Topic] {
			if w.polled[w.cfg.group(g)][p] < lo.Offset {
				return false
			}
		}
	}
	return true
}

func (w *Workload) notePolled(group string, r *kgo.Record) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.polled[group] == nil {
		w.polled[group] = map[int32]int64{}
	}
	w.polled[group][r.Partition] = max(w.polled[group][r.Partition], r.Offset+1)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
