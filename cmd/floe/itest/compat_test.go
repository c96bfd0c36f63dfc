package itest

// The compatibility matrix (issue 19): client libraries beyond franz-go,
// sarama and librdkafka, each an implementation of its own, drive the same
// three things against a real `floe serve`: admin calls, produce with every
// codec, and a group of three members that loses one. kafka-python (pure
// Python, Debian's python3-kafka) runs testdata/compat_kafka_python.py;
// segmentio/kafka-go (pure Go) runs below. docs/compatibility.md lists
// them.

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

func TestCompatKafkaPython(t *testing.T) {
	t.Parallel()
	for _, m := range []string{"kafka", "snappy", "lz4", "zstandard"} {
		requirePython(t, m)
	}
	b := start(t)
	cmd := exec.CommandContext(ctxFor(t, 4*time.Minute), "/usr/bin/python3", "testdata/compat_kafka_python.py",
		b.KafkaAddr, "kp-compat", "kp-group")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kafka-python: %v\n%s", err, out)
	}
	// The script prints one "ok" line per step it checked.
	got := 0
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "ok ") {
			got++
		}
	}
	if got != 5 {
		t.Fatalf("kafka-python passed %d of 5 steps:\n%s", got, out)
	}
}

// kafkaGoCodecs are the codecs segmentio/kafka-go writes (0 is none).
var kafkaGoCodecs = map[string]kafkago.Compression{
	"none": 0, "gzip": kafkago.Gzip, "snappy": kafkago.Snappy, "lz4": kafkago.Lz4, "zstd": kafkago.Zstd,
}

func TestCompatSegmentioKafkaGo(t *testing.T) {
	t.Parallel()
	b := start(t)
	const topic, group = "kafkago-compat", "kafkago-group"
	ctx := ctxFor(t, 4*time.Minute)
	client := &kafkago.Client{Addr: kafkago.TCP(b.KafkaAddr), Timeout: 30 * time.Second}
	kafkaGoAdmin(ctx, t, client, topic)

	want := map[string]bool{}
	for name, codec := range kafkaGoCodecs {
		kafkaGoProduce(ctx, t, b.KafkaAddr, topic, codec, name, 100, want)
	}

	g := newKafkaGoGroup(ctx, b.KafkaAddr, topic, group, 3)
	defer g.closeAll()
	g.waitFor(t, want, "three members")
	if n := g.membersWithRecords(0); n != 3 {
		t.Fatalf("%d of 3 members received records", n)
	}

	g.close(2) // leaves the group: the other two take its partitions
	mark := g.mark()
	before := len(want)
	kafkaGoProduce(ctx, t, b.KafkaAddr, topic, kafkago.Gzip, "after-leave", 120, want)
	g.waitFor(t, want, "after a member left")
	if parts := g.partitionsSince(mark); len(parts) != 6 {
		t.Fatalf("after a member left, records of %d partitions were consumed (%v), want 6", len(parts), parts)
	}
	g.closeAll()

	kafkaGoCheckCommitted(ctx, t, client, topic, group, int64(len(want)))
	t.Logf("kafka-go: %d records in every codec, %d after the leave, consumed and committed", before, len(want)-before)
	if _, err := client.DeleteTopics(ctx, &kafkago.DeleteTopicsRequest{Topics: []string{topic}}); err != nil {
		t.Fatalf("DeleteTopics: %v", err)
	}
}

// kafkaGoAdmin creates topic with 6 partitions and checks Metadata and
// DescribeConfigs see it.
func kafkaGoAdmin(ctx context.Context, t *testing.T, client *kafkago.Client, topic string) {
	t.Helper()
	cr, err := client.CreateTopics(ctx, &kafkago.CreateTopicsRequest{Topics: []kafkago.TopicConfig{{
		Topic: topic, NumPartitions: 6, ReplicationFactor: 1,
		ConfigEntries: []kafkago.ConfigEntry{{ConfigName: "retention.ms", ConfigValue: "86400000"}},
	}}})
	if err != nil || cr.Errors[topic] != nil {
		t.Fatalf("CreateTopics: %v %v", err, cr)
	}
	md, err := client.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 6 {
		t.Fatalf("Metadata: %v %+v", err, md)
	}
	dc, err := client.DescribeConfigs(ctx, &kafkago.DescribeConfigsRequest{Resources: []kafkago.DescribeConfigRequestResource{{
		ResourceType: kafkago.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{"retention.ms"},
	}}})
	if err != nil || len(dc.Resources) != 1 || dc.Resources[0].Error != nil || len(dc.Resources[0].ConfigEntries) != 1 ||
		dc.Resources[0].ConfigEntries[0].ConfigValue != "86400000" {
		t.Fatalf("DescribeConfigs: %v %+v", err, dc)
	}
}

// kafkaGoProduce writes n keyed records compressed with codec, acks=all,
// and adds their values to want.
func kafkaGoProduce(ctx context.Context, t *testing.T, addr, topic string, codec kafkago.Compression, tag string, n int, want map[string]bool) {
	t.Helper()
	w := &kafkago.Writer{Addr: kafkago.TCP(addr), Topic: topic, Compression: codec, RequiredAcks: kafkago.RequireAll,
		Balancer: &kafkago.Hash{}, BatchTimeout: 5 * time.Millisecond, BatchSize: 50}
	defer w.Close()
	msgs := make([]kafkago.Message, n)
	for i := range msgs {
		v := strings.Repeat(fmt.Sprintf("%s-%d;", tag, i), 3)
		msgs[i] = kafkago.Message{Key: fmt.Appendf(nil, "k%d", i), Value: []byte(v)}
		want[v] = true
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("kafka-go produce with %s: %v", tag, err)
	}
}

// kafkaGoGroup is a consumer group of kafka-go readers, each fetching and
// committing synchronously in its own goroutine.
type kafkaGoGroup struct {
	mu      sync.Mutex
	readers []*kafkago.Reader
	closed  []bool
	got     []consumed // every record consumed, in order of arrival
	wg      sync.WaitGroup
}

// consumed is one record a member received.
type consumed struct {
	member, partition int
	value             string
}

func newKafkaGoGroup(ctx context.Context, addr, topic, group string, members int) *kafkaGoGroup {
	g := &kafkaGoGroup{closed: make([]bool, members)}
	for i := range members {
		r := kafkago.NewReader(kafkago.ReaderConfig{
			Brokers: []string{addr}, GroupID: group, Topic: topic, StartOffset: kafkago.FirstOffset,
			HeartbeatInterval: 500 * time.Millisecond, SessionTimeout: 10 * time.Second,
			RebalanceTimeout: 10 * time.Second, MaxWait: 200 * time.Millisecond,
		})
		g.readers = append(g.readers, r)
		g.wg.Add(1)
		go g.run(ctx, i, r)
	}
	return g
}

func (g *kafkaGoGroup) run(ctx context.Context, member int, r *kafkago.Reader) {
	defer g.wg.Done()
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return // closed, or the test's context ended
		}
		g.mu.Lock()
		g.got = append(g.got, consumed{member, m.Partition, string(m.Value)})
		g.mu.Unlock()
		if err := r.CommitMessages(ctx, m); err != nil && !errors.Is(err, context.Canceled) {
			return
		}
	}
}

// waitFor waits until every value in want was consumed by some member.
func (g *kafkaGoGroup) waitFor(t *testing.T, want map[string]bool, what string) {
	t.Helper()
	waitFor(t, 2*time.Minute, what+": every record consumed", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		seen := map[string]bool{}
		for _, c := range g.got {
			seen[c.value] = true
		}
		for v := range want {
			if !seen[v] {
				return false
			}
		}
		return true
	})
}

// membersWithRecords counts the members that consumed a record at or
// after position from of the arrival order.
func (g *kafkaGoGroup) membersWithRecords(from int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	members := map[int]bool{}
	for _, c := range g.got[from:] {
		members[c.member] = true
	}
	return len(members)
}

// mark is the current position in the arrival order.
func (g *kafkaGoGroup) mark() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.got)
}

// partitionsSince returns the partitions consumed after position from, and
// by which member.
func (g *kafkaGoGroup) partitionsSince(from int) map[int]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	parts := map[int]int{}
	for _, c := range g.got[from:] {
		parts[c.partition] = c.member
	}
	return parts
}

// close closes member i's reader (a LeaveGroup), once.
func (g *kafkaGoGroup) close(i int) {
	g.mu.Lock()
	done := g.closed[i]
	g.closed[i] = true
	g.mu.Unlock()
	if !done {
		g.readers[i].Close()
	}
}

func (g *kafkaGoGroup) closeAll() {
	for i := range g.readers {
		g.close(i)
	}
	g.wg.Wait()
}

// kafkaGoCheckCommitted checks, with OffsetFetch and ListOffsets, that the
// group committed every partition up to its end, and ListGroups lists it.
func kafkaGoCheckCommitted(ctx context.Context, t *testing.T, client *kafkago.Client, topic, group string, total int64) {
	t.Helper()
	parts := []int{0, 1, 2, 3, 4, 5}
	of, err := client.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil || of.Error != nil {
		t.Fatalf("OffsetFetch: %v %v", err, of)
	}
	var reqs []kafkago.OffsetRequest
	for _, p := range parts {
		reqs = append(reqs, kafkago.LastOffsetOf(p))
	}
	lo, err := client.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{topic: reqs}})
	if err != nil {
		t.Fatalf("ListOffsets: %v", err)
	}
	end := map[int]int64{}
	var sumEnd int64
	for _, po := range lo.Topics[topic] {
		if po.Error != nil {
			t.Fatalf("ListOffsets partition %d: %v", po.Partition, po.Error)
		}
		end[po.Partition] = po.LastOffset
		sumEnd += po.LastOffset
	}
	if sumEnd != total {
		t.Fatalf("end offsets sum to %d, produced %d", sumEnd, total)
	}
	for _, p := range of.Topics[topic] {
		if p.Error != nil || p.CommittedOffset != end[p.Partition] {
			t.Fatalf("partition %d: committed %d (%v), end %d", p.Partition, p.CommittedOffset, p.Error, end[p.Partition])
		}
	}
	lg, err := client.ListGroups(ctx, &kafkago.ListGroupsRequest{})
	if err != nil {
		t.Fatalf("ListGroups: %v", err)
	}
	for _, gr := range lg.Groups {
		if gr.GroupID == group {
			return
		}
	}
	t.Fatalf("ListGroups lacks %s: %+v", group, lg.Groups)
}
