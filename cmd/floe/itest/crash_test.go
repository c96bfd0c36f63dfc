package itest

// Crashes during acks=all produces. Several producers (goroutines, each
// with its own franz-go client, idempotent, acks=all) write records with
// unique keys (the values below) to a three-partition topic without pause; the broker is killed with
// SIGKILL while their requests are in flight, restarted on the same data
// directory, and the producers carry on through it. After they stop, a
// full read must show:
//
//   - lost-write: every acknowledged value at the partition and offset its
//     acknowledgement named (so nothing acknowledged was lost or moved);
//   - order: within a producer and partition, acknowledged values at
//     increasing offsets in the order they were produced;
//   - duplicate: no value twice, even though the producers retried across
//     the crash (idempotence state must survive it).
//
// Unacknowledged values may or may not be there. The same workload with
// SIGTERM instead must also exit cleanly (status 0).
// FLOE_ITEST_LONG=1 crashes five times instead of once.

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	crashPartitions  = 3
	crashProducers   = 4
	crashOutstanding = 64 // records each producer keeps in flight
	crashAcksBefore  = 400
	crashAcksAfter   = 200
)

// ackedRecord is one acknowledged produce.
type ackedRecord struct {
	producer, seq int
	partition     int32
	offset        int64
}

// crashWorkload is the producers and what they were told.
type crashWorkload struct {
	topic string
	pad   []byte // every record's value; its key is its unique id
	stop  chan struct{}
	wg    sync.WaitGroup

	mu     sync.Mutex
	acked  map[string]ackedRecord // by id
	counts [crashProducers]int    // acknowledgements per producer
	failed int                    // records that ended in an error (outcome unknown)
	errs   []string               // the first errors, and each change of error

	outstanding atomic.Int64 // records produced and not yet called back
}

// startCrashWorkload starts the producers; each record's key is its
// unique id ("p<producer>-<seq>") and its value padBytes bytes.
func startCrashWorkload(t *testing.T, addr, topic string, padBytes int, opts ...kgo.Opt) *crashWorkload {
	w := &crashWorkload{topic: topic, pad: bytes.Repeat([]byte{'x'}, padBytes), stop: make(chan struct{}), acked: map[string]ackedRecord{}}
	for p := range crashProducers {
		cl := kgoClient(t, addr, append([]kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerLinger(time.Millisecond), kgo.RequiredAcks(kgo.AllISRAcks()),
			// kgo's default unknown-topic limit (4) stays: a restarting
			// broker answers only retriable errors for the topic.
			kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond })}, opts...)...)
		w.wg.Add(1)
		go w.produce(cl, p)
	}
	return w
}

func (w *crashWorkload) produce(cl *kgo.Client, producer int) {
	defer w.wg.Done()
	slots := make(chan struct{}, crashOutstanding)
	var pending sync.WaitGroup
	defer pending.Wait()
	for seq := 0; ; seq++ {
		select {
		case <-w.stop:
			return
		case slots <- struct{}{}:
		}
		id := fmt.Sprintf("p%d-%d", producer, seq)
		rec := &kgo.Record{Topic: w.topic, Partition: int32(seq % crashPartitions), Key: []byte(id), Value: w.pad}
		pending.Add(1)
		w.outstanding.Add(1)
		cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
			defer pending.Done()
			defer func() { <-slots }()
			w.outstanding.Add(-1)
			w.mu.Lock()
			defer w.mu.Unlock()
			if err != nil {
				w.failed++
				if len(w.errs) < 5 || w.errs[len(w.errs)-1] != err.Error() {
					w.errs = append(w.errs, err.Error())
				}
				return
			}
			w.acked[id] = ackedRecord{producer: producer, seq: seq, partition: r.Partition, offset: r.Offset}
			w.counts[producer]++
		})
	}
}

// waitAcks waits (bounded) until every producer has at least n more
// acknowledgements than in from.
func (w *crashWorkload) waitAcks(t *testing.T, from [crashProducers]int, n int, what string) {
	t.Helper()
	deadline := time.Now().Add(bulkWaitMax)
	for {
		w.mu.Lock()
		now := w.counts
		w.mu.Unlock()
		done := true
		for p := range now {
			done = done && now[p]-from[p] >= n
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: acknowledgements per producer %v, started from %v, want %d more each within %v",
				what, now, from, n, bulkWaitMax)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (w *crashWorkload) snapshot() [crashProducers]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts
}

// finish stops producing and waits for every outstanding record's outcome.
func (w *crashWorkload) finish(t *testing.T) {
	close(w.stop)
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(bulkWaitMax):
		t.Fatalf("producers still have %d records without an outcome after %v", w.outstanding.Load(), bulkWaitMax)
	}
}

func TestKill9DuringAcksAllProduce(t *testing.T) {
	t.Parallel()
	rounds := 1
	if longRun() {
		rounds = 5
	}
	runCrashTest(t, rounds, func(b *Broker) { b.Kill() })
}

func TestSigtermDuringAcksAllProduce(t *testing.T) {
	t.Parallel()
	runCrashTest(t, 1, func(b *Broker) {
		b.Stop()
		if !b.LastExitClean() {
			t.Errorf("floe serve did not exit cleanly on SIGTERM: %v", b.Exits())
		}
	})
}

func runCrashTest(t *testing.T, rounds int, interrupt func(*Broker)) {
	b := start(t)
	const topic = "crash"
	makeTopic(t, b.KafkaAddr, topic, crashPartitions, nil)
	w := startCrashWorkload(t, b.KafkaAddr, topic, 100)
	for round := range rounds {
		w.waitAcks(t, w.snapshot(), crashAcksBefore, fmt.Sprintf("round %d, before the crash", round))
		if n := w.outstanding.Load(); n == 0 {
			t.Fatalf("round %d: no record in flight when the broker was interrupted", round)
		}
		interrupt(b)
		b.Restart()
	}
	w.waitAcks(t, w.snapshot(), crashAcksAfter, "after the last restart")
	w.finish(t)
	t.Logf("%d values acknowledged, %d failed (outcome unknown); broker runs: %v", len(w.acked), w.failed, b.Exits())
	if len(w.errs) > 0 {
		t.Logf("produce errors (first, then changes): %s", strings.Join(w.errs[:min(len(w.errs), 20)], "; "))
	}
	checkCrashHistory(t, topic, w.acked, readAll(t, b.KafkaAddr, topic))
}

// checkCrashHistory checks the acknowledged values against a full read.
func checkCrashHistory(t *testing.T, topic string, acked map[string]ackedRecord, log map[int32][]*kgo.Record) {
	t.Helper()
	if problems := crashProblems(topic, acked, log); len(problems) > 0 {
		t.Fatalf("%d acknowledged values checked; problems (first %d):\n%s", len(acked), len(problems), strings.Join(problems, "\n"))
	}
}

// crashProblems returns the first problems (each starting with its
// check's name: lost-write, order, duplicate) of a history.
func crashProblems(topic string, acked map[string]ackedRecord, log map[int32][]*kgo.Record) []string {
	var problems []string
	report := func(format string, args ...any) {
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	where := map[string]string{}
	for p, recs := range log {
		for _, r := range recs {
			at := fmt.Sprintf("%s-%d@%d", topic, p, r.Offset)
			if prev, dup := where[string(r.Key)]; dup {
				report("duplicate: %s at %s and %s", r.Key, prev, at)
			}
			where[string(r.Key)] = at
		}
	}
	type key struct {
		producer  int
		partition int32
	}
	bySeq := map[key][]ackedRecord{}
	for id, a := range acked {
		recs := log[a.partition]
		if a.offset < 0 || a.offset >= int64(len(recs)) || string(recs[a.offset].Key) != id {
			got := "nothing"
			if a.offset >= 0 && a.offset < int64(len(recs)) {
				got = strconv.Quote(string(recs[a.offset].Key))
			}
			found := where[id]
			if found == "" {
				found = "nowhere"
			}
			report("lost-write: %s acknowledged at %s-%d@%d, which holds %s (found: %s)",
				id, topic, a.partition, a.offset, got, found)
		}
		k := key{a.producer, a.partition}
		bySeq[k] = append(bySeq[k], a)
	}
	for k, as := range bySeq {
		sort.Slice(as, func(i, j int) bool { return as[i].seq < as[j].seq })
		for i := 1; i < len(as); i++ {
			if as[i].offset <= as[i-1].offset {
				report("order: producer %d, partition %d: seq %d at offset %d after seq %d at offset %d",
					k.producer, k.partition, as[i].seq, as[i].offset, as[i-1].seq, as[i-1].offset)
			}
		}
	}
	return problems
}
