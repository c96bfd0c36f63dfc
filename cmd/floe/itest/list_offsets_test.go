package itest

// ListOffsets by timestamp: records with chosen timestamps, some out of
// order within and across batches, several records per batch. For every
// interesting target time, the answer must be Kafka's: the first offset, in
// log order, whose record timestamp is at or after the target (with that
// record's timestamp), or offset -1 when there is none. Asked with franz-go
// (kadm, ListOffsets v6), sarama (v1+) and kcat (`-o s@<ms>`, librdkafka),
// before and after a restart (which rebuilds whatever index the broker
// keeps).

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// timedTimestamps returns batches of record timestamps (ms): ten batches
// of ten, 10 ms apart, except batch 3 runs backwards inside itself and
// batch 6 starts below batch 5's maximum.
func timedTimestamps(baseMs int64) [][]int64 {
	var batches [][]int64
	for b := range 10 {
		ts := make([]int64, 10)
		for j := range ts {
			ts[j] = baseMs + int64(b*10+j)*10
		}
		switch b {
		case 3:
			sort.Slice(ts, func(i, j int) bool { return ts[i] > ts[j] })
		case 6:
			ts[0] = baseMs + 5*10*10 + 5 // below batch 5's last timestamp
		}
		batches = append(batches, ts)
	}
	return batches
}

// firstAtOrAfter is the reference answer: the first offset whose
// timestamp is >= target, or -1.
func firstAtOrAfter(ts []int64, target int64) (offset, timestamp int64) {
	for i, t := range ts {
		if t >= target {
			return int64(i), t
		}
	}
	return -1, -1
}

func TestListOffsetsByTime(t *testing.T) {
	t.Parallel()
	b := start(t)
	const topic = "timed"
	makeTopic(t, b.KafkaAddr, topic, 1, nil)
	baseMs := time.Now().Add(-time.Hour).UnixMilli() // within the default retention
	var flat []int64
	cl := kgoClient(t, b.KafkaAddr, kgo.ProducerLinger(50*time.Millisecond))
	for bi, batch := range timedTimestamps(baseMs) {
		recs := make([]*kgo.Record, len(batch))
		for j, ts := range batch {
			recs[j] = &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "b%d-r%d", bi, j), Timestamp: time.UnixMilli(ts)}
		}
		if err := cl.ProduceSync(ctxFor(t, opWaitMax), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		flat = append(flat, batch...)
	}
	multi := false
	for _, sb := range storedBatches(t, cl, topic, 0) {
		multi = multi || sb.Records > 1
	}
	if !multi {
		t.Fatal("every stored batch holds one record: the lookup inside a batch is not exercised")
	}

	targets := []int64{0, baseMs - 1000, flat[len(flat)-1] + 1, baseMs + 1_000_000}
	for _, ts := range flat {
		targets = append(targets, ts-1, ts, ts+1)
	}
	check := func(t *testing.T) {
		checkKadmOffsetsForTimes(t, b.KafkaAddr, topic, flat, targets)
		checkSaramaOffsetsForTimes(t, b.KafkaAddr, topic, flat, targets)
		checkKcatOffsetsForTimes(t, b.KafkaAddr, topic, flat, []int64{baseMs - 1000, flat[35], flat[35] + 1, flat[60], flat[60] - 1, flat[99]})
	}
	t.Run("running", check)
	b.Stop()
	b.Restart()
	t.Run("restarted", check)
}

func checkKadmOffsetsForTimes(t *testing.T, addr, topic string, flat, targets []int64) {
	cl := kgoClient(t, addr)
	adm := kadm.NewClient(cl)
	for _, target := range targets {
		listed, err := adm.ListOffsetsAfterMilli(ctxFor(t, opWaitMax), target, topic)
		if err != nil {
			t.Fatalf("ListOffsetsAfterMilli(%d): %v", target, err)
		}
		got, ok := listed.Lookup(topic, 0)
		if !ok || got.Err != nil {
			t.Fatalf("ListOffsetsAfterMilli(%d): %+v", target, got)
		}
		wantOff, wantTs := firstAtOrAfter(flat, target)
		for _, v := range []int16{1, 6} {
			off, ts := rawListOffset(t, cl, topic, target, v)
			if off != wantOff || ts != wantTs {
				t.Fatalf("ListOffsets v%d, time %d: offset %d timestamp %d, want offset %d timestamp %d",
					v, target, off, ts, wantOff, wantTs)
			}
		}
		if wantOff == -1 {
			// kadm turns Kafka's "none" (-1) into the end offset; the
			// timestamp stays -1 either way.
			if got.Timestamp != -1 || (got.Offset != -1 && got.Offset != int64(len(flat))) {
				t.Fatalf("kadm, time %d after every record: offset %d timestamp %d, want -1 (or the end, %d) and -1",
					target, got.Offset, got.Timestamp, len(flat))
			}
			continue
		}
		if got.Offset != wantOff || got.Timestamp != wantTs {
			t.Fatalf("kadm, time %d: offset %d timestamp %d, want offset %d timestamp %d",
				target, got.Offset, got.Timestamp, wantOff, wantTs)
		}
	}
}

// rawListOffset asks for one timestamp with a ListOffsets request of the
// given version and returns the offset and timestamp answered.
func rawListOffset(t *testing.T, cl *kgo.Client, topic string, target int64, version int16) (offset, timestamp int64) {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = version
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = 0
	rp.Timestamp = target
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxFor(t, opWaitMax), cl)
	if err != nil {
		t.Fatalf("ListOffsets v%d: %v", version, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("ListOffsets v%d: %d topics in the response", version, len(resp.Topics))
	}
	sp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
		t.Fatalf("ListOffsets v%d, time %d: %v", version, target, err)
	}
	return sp.Offset, sp.Timestamp
}

func checkSaramaOffsetsForTimes(t *testing.T, addr, topic string, flat, targets []int64) {
	c, err := sarama.NewClient([]string{addr}, saramaConfig(sarama.CompressionNone))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, target := range targets {
		if target < 0 {
			continue // sarama reads -1 and -2 as latest and earliest
		}
		got, err := c.GetOffset(topic, 0, target)
		if err != nil {
			t.Fatalf("sarama GetOffset(%d): %v", target, err)
		}
		if want, _ := firstAtOrAfter(flat, target); got != want {
			t.Fatalf("sarama, time %d: offset %d, want %d", target, got, want)
		}
	}
}

// checkKcatOffsetsForTimes starts kcat at `s@<target>` and reads the first
// record's offset: librdkafka's offsetsForTimes path (ListOffsets v1+).
func checkKcatOffsetsForTimes(t *testing.T, addr, topic string, flat, targets []int64) {
	for _, target := range targets {
		want, _ := firstAtOrAfter(flat, target)
		out := kcat(t, nil, "-b", addr, "-C", "-t", topic, "-p", "0", "-o", "s@"+strconv.FormatInt(target, 10),
			"-c", "1", "-e", "-q", "-f", "%o\n")
		got, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		if err != nil || got != want {
			t.Fatalf("kcat -o s@%d: printed %q, want offset %d", target, out, want)
		}
	}
}

// TestListOffsetsSpecialTimestamps asks for Kafka's special timestamps
// (issue 19): -3, max timestamp (v7+, KIP-734), is the first record holding
// the largest timestamp, with that timestamp, even when later records are
// older; -4, earliest local (v8+), is the log start offset; -5, latest
// tiered (v9+), is -1 without tiered storage. They must also follow the
// start offset when DeleteRecords raises it. Asked with ListOffsets v7
// through v10 (franz-go's raw requests), before and after a restart.
func TestListOffsetsSpecialTimestamps(t *testing.T) {
	t.Parallel()
	b := start(t)
	const topic = "special"
	makeTopic(t, b.KafkaAddr, topic, 1, nil)
	cl := kgoClient(t, b.KafkaAddr, kgo.ProducerLinger(50*time.Millisecond))

	// An empty partition has no record with a largest timestamp.
	if off, ts := rawListOffset(t, cl, topic, -3, 7); off != -1 || ts != -1 {
		t.Fatalf("max timestamp of an empty partition: offset %d timestamp %d, want -1 -1", off, ts)
	}

	// Two batches; 900 first appears at offset 5 and again at 6, and
	// older records follow.
	baseMs := time.Now().Add(-time.Hour).UnixMilli()
	stamps := [][]int64{{100, 500, 200}, {500, 300, 900, 900, 100}}
	for _, batch := range stamps {
		recs := make([]*kgo.Record, len(batch))
		for j, ts := range batch {
			recs[j] = &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%d", ts), Timestamp: time.UnixMilli(baseMs + ts)}
		}
		if err := cl.ProduceSync(ctxFor(t, opWaitMax), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	want := func(t *testing.T, startOffset, maxOffset, maxTs int64) {
		t.Helper()
		for v := int16(7); v <= 10; v++ {
			if off, ts := rawListOffset(t, cl, topic, -3, v); off != maxOffset || ts != baseMs+maxTs {
				t.Fatalf("v%d max timestamp: offset %d timestamp %d, want offset %d timestamp %d", v, off, ts, maxOffset, baseMs+maxTs)
			}
		}
		for v := int16(8); v <= 10; v++ {
			if off, _ := rawListOffset(t, cl, topic, -4, v); off != startOffset {
				t.Fatalf("v%d earliest local: offset %d, want %d", v, off, startOffset)
			}
			if off, _ := rawListOffset(t, cl, topic, -2, v); off != startOffset {
				t.Fatalf("v%d earliest: offset %d, want %d", v, off, startOffset)
			}
			if off, _ := rawListOffset(t, cl, topic, -1, v); off != 8 {
				t.Fatalf("v%d latest: offset %d, want 8", v, off)
			}
		}
		for v := int16(9); v <= 10; v++ {
			if off, ts := rawListOffset(t, cl, topic, -5, v); off != -1 || ts != -1 {
				t.Fatalf("v%d latest tiered without tiered storage: offset %d timestamp %d, want -1 -1", v, off, ts)
			}
		}
	}
	want(t, 0, 5, 900)
	deleteRecordsTo := func(offset int64) {
		t.Helper()
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: offset})
		resps, err := kadm.NewClient(cl).DeleteRecords(ctxFor(t, opWaitMax), offs)
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := resps.Lookup(topic, 0); r.Err != nil {
			t.Fatalf("DeleteRecords to %d: %v", offset, r.Err)
		}
	}
	deleteRecordsTo(6) // offset 5 goes; its equal at 6 is the first now
	want(t, 6, 6, 900)
	b.Stop()
	b.Restart()
	want(t, 6, 6, 900)
	deleteRecordsTo(7) // only the old 100 at 7 is left
	want(t, 7, 7, 100)
}
