package itest

// Issue 7's cluster tests: three (or four) real `floe serve` processes
// replicating over TCP, with kill -9 as the fault.

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func startCluster(t *testing.T, n int, opts ...Option) []*Broker {
	t.Helper()
	return StartCluster(t, n, append([]Option{WithBinary(floeBin)}, opts...)...)
}

func seeds(bs []*Broker) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.KafkaAddr)
	}
	return out
}

// createReplicated creates a topic with replication factor rf and waits
// until every partition has a leader.
func createReplicated(t *testing.T, bs []*Broker, topic string, partitions int32, rf int16) {
	t.Helper()
	cl := kgoClient(t, bs[0].KafkaAddr, kgo.SeedBrokers(seeds(bs)...))
	adm := kadm.NewClient(cl)
	// A loaded machine can answer REQUEST_TIMED_OUT when the controller
	// commits the creation after the request's timeout (load average 50:
	// 30 partitions at RF=3); as a Kafka client would, ask again, and take
	// TOPIC_ALREADY_EXISTS after a timeout as the first request's success.
	var err error
	timedOut := false
	waitFor(t, 90*time.Second, "create "+topic, func() bool {
		var resp kadm.CreateTopicResponse
		resp, err = adm.CreateTopic(ctxFor(t, 30*time.Second), partitions, rf, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if timedOut && errors.Is(err, kerr.TopicAlreadyExists) {
			err = nil
		}
		timedOut = timedOut || errors.Is(err, kerr.RequestTimedOut)
		return !errors.Is(err, kerr.RequestTimedOut)
	})
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	waitFor(t, 30*time.Second, topic+" leaders", func() bool {
		md, err := adm.Metadata(ctxFor(t, 5*time.Second), topic)
		if err != nil {
			return false
		}
		td := md.Topics[topic]
		if td.Err != nil || len(td.Partitions) != int(partitions) {
			return false
		}
		for _, p := range td.Partitions {
			if p.Leader < 0 || p.Err != nil {
				return false
			}
		}
		return true
	})
}

func waitFor(t *testing.T, max time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(max)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", max, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leaderOf asks the cluster who leads a partition.
func leaderOf(t *testing.T, adm *kadm.Client, topic string, partition int32) int32 {
	md, err := adm.Metadata(ctxFor(t, 5*time.Second), topic)
	if err != nil {
		return -1
	}
	p, ok := md.Topics[topic].Partitions[partition]
	if !ok {
		return -1
	}
	return p.Leader
}

// agreedLeader waits until every running broker names the same leader for
// a partition and returns it: a broker that just restarted may still
// repeat an old leader for a moment.
func agreedLeader(t *testing.T, bs []*Broker, topic string, partition int32) int32 {
	t.Helper()
	var lead int32
	waitFor(t, 30*time.Second, "agreement on the leader", func() bool {
		lead = -1
		for _, b := range bs {
			if !b.Running() {
				continue
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.KafkaAddr))
			if err != nil {
				return false
			}
			l := leaderOf(t, kadm.NewClient(cl), topic, partition)
			cl.Close()
			if l < 1 || (lead != -1 && l != lead) {
				return false
			}
			lead = l
		}
		return lead >= 1
	})
	return lead
}

// ackLog records every acknowledged write: value -> (partition, offset),
// keyed by ackKey, which keeps a large value's digest instead of its bytes.
// It held each value twice (the key and the *kgo.Record): about 2.4 bytes
// of the test process's memory per byte written, so a 10 GiB
// TestReplaceBrokerWithLostDisk outgrew the 24 GB machine, which slowed
// the bulk write to under 0.2 MiB/s (docs/benchmarks.md).
type ackLog struct {
	mu    sync.Mutex
	acked map[string]ackAt
	times []time.Time // completion time of each success, in order
	// started is when the produce call of each success began (same order
	// as times): a failover is measured to the first success of a call
	// made after the fault, since responses a dying leader already wrote
	// still arrive after it is killed.
	started []time.Time
	fails   int
}

// ackAt is where a write was acknowledged or read.
type ackAt struct {
	Partition int32
	Offset    int64
}

// ackKeyMax is the longest value ackKey keeps whole.
const ackKeyMax = 64

// ackKey names a value in ackLog and in checkNoLossWithin: the value
// itself up to ackKeyMax bytes, else its first 32 bytes (readable in a
// failure message) and its SHA-256.
func ackKey(v []byte) string {
	if len(v) <= ackKeyMax {
		return string(v)
	}
	sum := sha256.Sum256(v)
	return fmt.Sprintf("%s...(%d bytes, sha256 %x)", v[:32], len(v), sum)
}

func newAckLog() *ackLog { return &ackLog{acked: map[string]ackAt{}} }

func (a *ackLog) add(r *kgo.Record, started time.Time) {
	k := ackKey(r.Value)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.acked[k] = ackAt{r.Partition, r.Offset}
	a.times = append(a.times, time.Now())
	a.started = append(a.started, started)
}

// firstAfter returns when the first call that began after t succeeded.
func (a *ackLog) firstAfter(t time.Time) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, s := range a.started {
		if s.After(t) {
			return a.times[i], true
		}
	}
	return time.Time{}, false
}

// count is how many writes have been acknowledged so far.
func (a *ackLog) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.acked)
}

// waitForMore waits, up to max, until more than n writes beyond those
// acknowledged now are acknowledged: writes still go through.
func (a *ackLog) waitForMore(t *testing.T, max time.Duration, what string, n int) {
	t.Helper()
	before := a.count()
	waitFor(t, max, what, func() bool { return a.count() > before+n })
}

// writers is a set of producers (see producer) logging into one ackLog.
type writers struct {
	stopCh chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

// startWriters starts one producer per tag on topic. The caller defers
// stop, so that a test that fails midway stops its writers too, and calls
// it again before its final read.
func startWriters(t *testing.T, bs []*Broker, topic string, log *ackLog, tags ...string) *writers {
	w := &writers{stopCh: make(chan struct{})}
	for _, tag := range tags {
		producer(t, bs, topic, tag, log, w.stopCh, &w.wg)
	}
	return w
}

// stop stops every writer and waits for each to return; a second call
// only waits.
func (w *writers) stop() {
	w.once.Do(func() { close(w.stopCh) })
	w.wg.Wait()
}

// producer writes unique values with acks=all and idempotence, one at a
// time, until stop is closed. Each success is logged with its offset.
func producer(t *testing.T, bs []*Broker, topic, tag string, log *ackLog, stop <-chan struct{}, wg *sync.WaitGroup) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(bs)...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1<<30),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }),
		kgo.ProduceRequestTimeout(3*time.Second), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Error(err)
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cl.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r := &kgo.Record{Value: []byte(fmt.Sprintf("%s-%d", tag, i))}
			started := time.Now()
			err := cl.ProduceSync(ctx, r).FirstErr()
			cancel()
			if err == nil {
				log.add(r, started)
			} else {
				log.mu.Lock()
				log.fails++
				log.mu.Unlock()
			}
		}
	}()
}

// checkNoLoss reads every partition and checks each acknowledged value is
// there, at its acknowledged offset, exactly once.
func checkNoLoss(t *testing.T, bs []*Broker, topic string, log *ackLog) int {
	t.Helper()
	return checkNoLossWithin(t, bs, topic, log, 60*time.Second)
}

// checkNoLossWithin is checkNoLoss with the final read bounded by readMax
// instead of 60 s, for tests whose data takes longer to read back.
func checkNoLossWithin(t *testing.T, bs []*Broker, topic string, log *ackLog, readMax time.Duration) int {
	t.Helper()
	cl := kgoClient(t, bs[0].KafkaAddr, kgo.SeedBrokers(seeds(bs)...))
	adm := kadm.NewClient(cl)
	var ends kadm.ListedOffsets
	waitFor(t, 60*time.Second, "end offsets of every partition", func() bool {
		var err error
		ends, err = adm.ListEndOffsets(ctxFor(t, 10*time.Second), topic)
		return err == nil && ends.Error() == nil
	})
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	consumer := kgoClient(t, bs[0].KafkaAddr, kgo.SeedBrokers(seeds(bs)...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string][]ackAt{} // by ackKey: never the values themselves
	got := map[int32]int64{}
	ctx := ctxFor(t, readMax)
	done := func() bool {
		for p, end := range want {
			if got[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("final read incomplete: got %v of %v", got, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			k := ackKey(r.Value)
			seen[k] = append(seen[k], ackAt{r.Partition, r.Offset})
			got[r.Partition] = r.Offset + 1
		})
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	for v, a := range log.acked {
		rs := seen[v]
		if len(rs) == 0 {
			t.Errorf("lost write: %q acknowledged at %d/%d never read", v, a.Partition, a.Offset)
			continue
		}
		if len(rs) > 1 {
			t.Errorf("duplicate: %q read %d times", v, len(rs))
		}
		if rs[0].Partition != a.Partition || rs[0].Offset != a.Offset {
			t.Errorf("inconsistent offset: %q acknowledged at %d/%d, read at %d/%d", v, a.Partition, a.Offset, rs[0].Partition, rs[0].Offset)
		}
	}
	return len(log.acked)
}

func TestClusterFailoverKillLeader(t *testing.T) {
	trials := 10
	if testing.Short() {
		trials = 3
	}
	bs := startCluster(t, 3)
	createReplicated(t, bs, "fo", 1, 3)
	log := newAckLog()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	producer(t, bs, "fo", "p1", log, stop, &wg)
	producer(t, bs, "fo", "p2", log, stop, &wg)
	var failovers []time.Duration
	for trial := 0; trial < trials; trial++ {
		waitFor(t, 30*time.Second, "writes before the kill", func() bool {
			log.mu.Lock()
			defer log.mu.Unlock()
			return len(log.times) > 20*(trial+1)
		})
		lead := agreedLeader(t, bs, "fo", 0)
		victim := bs[lead-1]
		victim.Kill()
		// Kill returns once the process has exited: only calls made after
		// that can measure the failover (earlier ones may still have been
		// answered by the dying leader).
		killed := time.Now()
		var first time.Time
		waitFor(t, 30*time.Second, "a write made after the kill", func() bool {
			var ok bool
			first, ok = log.firstAfter(killed)
			return ok
		})
		failovers = append(failovers, first.Sub(killed))
		victim.Restart() // catches up as a follower
	}
	close(stop)
	wg.Wait()
	n := checkNoLoss(t, bs, "fo", log)
	sort.Slice(failovers, func(i, j int) bool { return failovers[i] < failovers[j] })
	var parts []string
	for _, d := range failovers {
		parts = append(parts, d.Round(time.Millisecond).String())
	}
	t.Logf("%d trials, kill -9 of the leader to the first acknowledged acks=all write: %s", len(failovers), strings.Join(parts, " "))
	t.Logf("p50 %v, max %v; %d writes acknowledged, none lost", failovers[len(failovers)/2].Round(time.Millisecond), failovers[len(failovers)-1].Round(time.Millisecond), n)
	if out := os.Getenv("FLOE_FAILOVER_OUT"); out != "" {
		os.WriteFile(out, []byte(strings.Join(parts, "\n")+"\n"), 0o644)
	}
}

// TestClusterMinorityAndMajorityLoss: with one of three brokers down writes
// go on; with two down every acks=all write fails, in bounded time, and the
// survivor says so plainly; when the majority returns nothing acknowledged
// is missing.
//
// The majority loss is set up as in the run of issue 24 that hung `make
// test` for 20 minutes: the survivor is the partition's leader (it appends
// a write, then can only time it out), it holds a block of producer ids (an
// idempotent producer gets its id without the controller, and so reaches
// the Produce), and the producer's request timeout (100 ms) passes before
// the survivor steps down. With the old test's producer options (no
// AllowIdempotentProduceCancellation) this test hangs, on any broker.
func TestClusterMinorityAndMajorityLoss(t *testing.T) {
	bs := startCluster(t, 3)
	createReplicated(t, bs, "mm", 1, 3)
	log := newAckLog()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	producer(t, bs, "mm", "w", log, stop, &wg)
	count := log.count
	waitFor(t, 30*time.Second, "first writes", func() bool { return count() > 20 })

	// A minority down (a follower): writes go on.
	lead := agreedLeader(t, bs, "mm", 0)
	bs[lead%3].Kill()
	before := count()
	waitFor(t, 30*time.Second, "writes with one broker down", func() bool { return count() > before+50 })
	close(stop)
	wg.Wait()

	// The survivor-to-be is the leader now; it hands out a producer id, so
	// it holds a block of them.
	lead = agreedLeader(t, bs, "mm", 0)
	alive := bs[lead-1]
	var victim *Broker
	for _, b := range bs {
		if b != alive && b.Running() {
			victim = b
		}
	}
	raw := dialRaw(t, alive.KafkaAddr)
	pid := kmsg.NewPtrInitProducerIDRequest()
	pid.Version, pid.ProducerID, pid.ProducerEpoch = 4, -1, -1
	if resp, err := raw.roundTrip(pid); err != nil {
		t.Fatalf("InitProducerId: %v", err)
	} else if err := kerr.ErrorForCode(resp.(*kmsg.InitProducerIDResponse).ErrorCode); err != nil {
		t.Fatalf("InitProducerId: %v", err)
	}

	// A majority down. The survivor learns it lost its quorum only at a
	// check-quorum, 0.5-1 s later; until then it appends what it is sent.
	victim.Kill()
	// A franz-go producer, at once: its first Produce times out (100 ms)
	// while the survivor still leads, so the answer is REQUEST_TIMED_OUT,
	// and the write may yet commit. An idempotent franz-go producer gives
	// up on such a record only if allowed to
	// (AllowIdempotentProduceCancellation): without it, it retries until it
	// learns the record's fate, which without a quorum is never, whatever
	// its context says. That is how issue 24's run hung (docs/testing.md).
	cl := kgoClient(t, alive.KafkaAddr, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(2),
		kgo.ProduceRequestTimeout(100*time.Millisecond), kgo.RecordDeliveryTimeout(8*time.Second),
		kgo.AllowIdempotentProduceCancellation())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- cl.ProduceSync(ctx, &kgo.Record{Topic: "mm", Value: []byte("must-fail")}).FirstErr() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("acks=all write acknowledged with two of three brokers down")
		}
		t.Logf("with a majority down, acks=all failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(opWaitMax):
		t.Fatalf("ProduceSync with a 20s context still blocked after %v with a majority down", opWaitMax)
	}
	// Every acks=all Produce is answered, as a failure: REQUEST_TIMED_OUT
	// while the survivor still believes it leads, NOT_LEADER_OR_FOLLOWER
	// once it has stepped down (or NOT_ENOUGH_REPLICAS). readResponse
	// bounds each wait.
	for i := 0; i < 3; i++ {
		req := produceRequest(9, -1, "mm", 0, plainBatch(fmt.Sprintf("no-quorum-%d", i)))
		req.TimeoutMillis = 2000
		resp, err := raw.roundTrip(req)
		if err != nil {
			t.Fatalf("acks=all produce %d with a majority down: %v", i, err)
		}
		code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
		switch code {
		case kerr.RequestTimedOut.Code, kerr.NotEnoughReplicas.Code, kerr.NotLeaderForPartition.Code:
			t.Logf("acks=all produce %d with a majority down: %v", i, kerr.ErrorForCode(code))
		default:
			t.Fatalf("acks=all produce %d with a majority down answered %v", i, kerr.ErrorForCode(code))
		}
	}
	// The survivor, having stepped down, names no leader for the
	// partition. It used to name itself (the controller's last record),
	// and clients went round for ever: Produce, NOT_LEADER_OR_FOLLOWER,
	// Metadata, the same leader again.
	adm := kadm.NewClient(kgoClient(t, alive.KafkaAddr))
	waitFor(t, 30*time.Second, "the survivor to name no leader", func() bool {
		md, err := adm.Metadata(ctxFor(t, 5*time.Second), "mm")
		if err != nil {
			return false
		}
		p, ok := md.Topics["mm"].Partitions[0]
		return ok && p.Leader == -1 && errors.Is(p.Err, kerr.LeaderNotAvailable)
	})

	// The majority returns: nothing acknowledged is missing.
	for _, b := range bs {
		if !b.Running() {
			b.Restart()
		}
	}
	checkNoLoss(t, bs, "mm", log)
}

func TestClusterReassignToNewBroker(t *testing.T) {
	bs := startCluster(t, 3)
	joiner := StartBroker(t, WithBinary(floeBin), WithNodeID(4), WithRaftAddr(FreeAddr(t)),
		WithFlags("--join", bs[0].RaftAddr))
	all := append(bs[:3:3], joiner)
	createReplicated(t, bs, "mv", 2, 3)
	log := newAckLog()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	producer(t, bs, "mv", "a", log, stop, &wg)
	producer(t, bs, "mv", "b", log, stop, &wg)
	count := log.count
	waitFor(t, 30*time.Second, "first writes", func() bool { return count() > 50 })

	adm := kadm.NewClient(kgoClient(t, bs[0].KafkaAddr, kgo.SeedBrokers(seeds(all)...)))
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign("mv", 0, []int32{4, 2, 3})
	req.Assign("mv", 1, []int32{1, 4, 3})
	resp, err := adm.AlterPartitionAssignments(ctxFor(t, 30*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
		if r.Err != nil {
			t.Fatalf("reassign %d: %v", r.Partition, r.Err)
		}
	})
	waitFor(t, 60*time.Second, "the moves to finish", func() bool {
		moves, err := adm.ListPartitionReassignments(ctxFor(t, 5*time.Second), kadm.TopicsSet{"mv": {0: {}, 1: {}}})
		return err == nil && len(moves["mv"]) == 0
	})
	md, err := adm.Metadata(ctxFor(t, 5*time.Second), "mv")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(md.Topics["mv"].Partitions[0].Replicas); got != "[4 2 3]" {
		t.Fatalf("partition 0 replicas %s after the move", got)
	}
	before := count()
	waitFor(t, 30*time.Second, "writes after the move", func() bool { return count() > before+50 })
	close(stop)
	wg.Wait()
	// The new broker alone can serve the partition it leads or follows:
	// stop one old replica and read everything.
	bs[0].Kill()
	n := checkNoLoss(t, all, "mv", log)
	t.Logf("%d writes acknowledged across the move, none lost or duplicated", n)
}

// TestRestartWithLargeLog fills a broker with at least 1 GiB of log, kills
// it with -9, and measures how long the restarted broker takes to serve
// again (ready, and a fetch at the log end answered). FLOE_ITEST_LONG=1
// runs it; the figure goes in docs/benchmarks.md.
func TestRestartWithLargeLog(t *testing.T) {
	if !longRun() {
		t.Skip("writes 1 GiB: set FLOE_ITEST_LONG=1")
	}
	b := start(t)
	makeTopic(t, b.KafkaAddr, "big", 4, nil)
	cl := kgoClient(t, b.KafkaAddr, kgo.DefaultProduceTopic("big"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(100000))
	value := make([]byte, 1024)
	const total = 1 << 30
	ctx := ctxFor(t, 10*time.Minute)
	var wg sync.WaitGroup
	var failed error
	var mu sync.Mutex
	for written := 0; written < total; written += len(value) {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				failed = err
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	if failed != nil {
		t.Fatal(failed)
	}
	ends := endOffsets(t, b.KafkaAddr, "big")
	b.Kill()
	start := time.Now()
	b.Restart() // waits for /readyz
	ready := time.Since(start)
	got := endOffsets(t, b.KafkaAddr, "big")
	served := time.Since(start)
	for p, e := range ends {
		if got[p] != e {
			t.Fatalf("partition %d: end offset %d after restart, %d before", p, got[p], e)
		}
	}
	t.Logf("1 GiB in 4 partitions: kill -9, restart ready in %v, end offsets served in %v", ready.Round(time.Millisecond), served.Round(time.Millisecond))
}
