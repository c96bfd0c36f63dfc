package itest

// Every codec with every client: franz-go, sarama and kcat (librdkafka)
// each produce 10,000 records per codec (none, gzip, snappy, lz4, zstd) to
// a real broker and consume them back. The records must come back
// byte-identical (key, value, headers, timestamp where the client sets
// one), in order, at offsets 0..n-1; and the batches the broker stores must
// carry the codec the client was asked for, so a client that silently falls
// back to no compression (as librdkafka does for lz4 when it misjudges the
// broker) fails the test instead of passing it uncompressed.

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

const codecRecords = 10000

var codecs = []struct {
	name   string
	id     int8
	kgo    kgo.CompressionCodec
	sarama sarama.CompressionCodec
}{
	{"none", 0, kgo.NoCompression(), sarama.CompressionNone},
	{"gzip", 1, kgo.GzipCompression(), sarama.CompressionGZIP},
	{"snappy", 2, kgo.SnappyCompression(), sarama.CompressionSnappy},
	{"lz4", 3, kgo.Lz4Compression(), sarama.CompressionLZ4},
	{"zstd", 4, kgo.ZstdCompression(), sarama.CompressionZSTD},
}

// testRecord is what a test produces and expects back.
type testRecord struct {
	Key, Value []byte
	Headers    []kgo.RecordHeader
	Timestamp  time.Time // zero: the client picks it and it is not compared
}

// binaryRecords returns n records with arbitrary bytes: null and empty
// keys and values, headers on some, a few 20 KiB values, and runs of
// repeated bytes so compression has work to do. Timestamps are set, one
// millisecond apart.
func binaryRecords(seed uint64, n int) []testRecord {
	rng := rand.New(rand.NewPCG(seed, 5))
	base := time.UnixMilli(1_700_000_000_000)
	out := make([]testRecord, n)
	for i := range out {
		r := testRecord{Timestamp: base.Add(time.Duration(i) * time.Millisecond)}
		switch i % 1000 {
		case 7: // null key and value
		case 8:
			r.Key, r.Value = []byte{}, []byte{}
		case 9:
			r.Key, r.Value = randomBytes(rng, 8), randomBytes(rng, 20<<10)
		default:
			r.Key = fmt.Appendf(nil, "key-%d", i%97)
			r.Value = append(fmt.Appendf(nil, "%06d|", i), randomBytes(rng, rng.IntN(200))...)
			r.Value = append(r.Value, bytes.Repeat([]byte{byte(i)}, rng.IntN(100))...)
		}
		if i%10 == 0 {
			r.Headers = []kgo.RecordHeader{{Key: "h", Value: fmt.Appendf(nil, "%d", i)}, {Key: "empty"}}
		}
		out[i] = r
	}
	return out
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// textRecords returns n records kcat can carry as "key:value" lines:
// printable ASCII, no newline, no ':' in keys (values may hold ':').
func textRecords(seed uint64, n int) []testRecord {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]testRecord, n)
	for i := range out {
		v := fmt.Appendf(nil, "%06d|", i)
		for range rng.IntN(200) {
			v = append(v, byte(0x20+rng.IntN(0x7f-0x20)))
		}
		v = append(v, bytes.Repeat([]byte{'a' + byte(i%26)}, rng.IntN(100))...)
		out[i] = testRecord{Key: fmt.Appendf(nil, "key-%d", i%97), Value: v}
	}
	return out
}

// sameRecords fails the test unless got equals want record for record.
// nullAware also requires null and empty to stay distinct.
func sameRecords(t testing.TB, want, got []testRecord, nullAware bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records back, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if !bytes.Equal(w.Key, g.Key) || !bytes.Equal(w.Value, g.Value) {
			t.Fatalf("record %d differs:\n got key %q value %.80q (%d bytes)\nwant key %q value %.80q (%d bytes)",
				i, g.Key, g.Value, len(g.Value), w.Key, w.Value, len(w.Value))
		}
		if nullAware && ((w.Key == nil) != (g.Key == nil) || (w.Value == nil) != (g.Value == nil)) {
			t.Fatalf("record %d: null-ness changed: want key nil %v value nil %v, got %v %v",
				i, w.Key == nil, w.Value == nil, g.Key == nil, g.Value == nil)
		}
		if !w.Timestamp.IsZero() && !w.Timestamp.Equal(g.Timestamp) {
			t.Fatalf("record %d: timestamp %v, want %v", i, g.Timestamp, w.Timestamp)
		}
		if !sameHeaders(w.Headers, g.Headers) {
			t.Fatalf("record %d: headers %v, want %v", i, g.Headers, w.Headers)
		}
	}
}

func sameHeaders(a, b []kgo.RecordHeader) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !bytes.Equal(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

// checkStoredCodec fails unless every stored batch of topic-0 uses codec
// and the batches hold n records in all.
func checkStoredCodec(t testing.TB, addr, topic string, codec int8, n int) {
	t.Helper()
	batches := storedBatches(t, kgoClient(t, addr), topic, 0)
	total := 0
	for _, b := range batches {
		if b.Codec != codec {
			t.Fatalf("%s: batch at offset %d is stored with codec %s, want %s (the client did not compress as asked)",
				topic, b.BaseOffset, codecName(b.Codec), codecName(codec))
		}
		total += int(b.Records)
	}
	if total != n {
		t.Fatalf("%s: stored batches hold %d records, want %d", topic, total, n)
	}
	t.Logf("%s: %d records in %d batches, all %s", topic, n, len(batches), codecName(codec))
}

func TestFranzGoEveryCodec(t *testing.T) {
	t.Parallel()
	b := start(t)
	for i, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "kgo-" + c.name
			makeTopic(t, b.KafkaAddr, topic, 1, nil)
			want := binaryRecords(uint64(100+i), codecRecords)
			cl := kgoClient(t, b.KafkaAddr, kgo.ProducerBatchCompression(c.kgo), kgo.ProducerLinger(5*time.Millisecond))
			recs := make([]*kgo.Record, len(want))
			for j, w := range want {
				recs[j] = &kgo.Record{Topic: topic, Key: w.Key, Value: w.Value, Headers: w.Headers, Timestamp: w.Timestamp}
			}
			for j, res := range cl.ProduceSync(ctxFor(t, bulkWaitMax), recs...) {
				if res.Err != nil {
					t.Fatalf("produce record %d: %v", j, res.Err)
				}
				if res.Record.Offset != int64(j) {
					t.Fatalf("record %d acknowledged at offset %d", j, res.Record.Offset)
				}
			}
			var got []testRecord
			for _, r := range readRange(t, b.KafkaAddr, topic, 0, codecRecords) {
				got = append(got, testRecord{Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp})
			}
			sameRecords(t, want, got, true)
			checkStoredCodec(t, b.KafkaAddr, topic, c.id, codecRecords)
		})
	}
}

func saramaConfig(codec sarama.CompressionCodec) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_0_0_0 // Produce v7+, Fetch v11+: zstd allowed
	cfg.ClientID = "floe-itest"
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Compression = codec
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Net.MaxOpenRequests = 1 // a retry cannot reorder records
	cfg.Consumer.Return.Errors = true
	return cfg
}

func TestSaramaEveryCodec(t *testing.T) {
	t.Parallel()
	b := start(t)
	for i, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "sarama-" + c.name
			makeTopic(t, b.KafkaAddr, topic, 1, nil)
			want := binaryRecords(uint64(200+i), codecRecords)
			saramaProduce(t, b.KafkaAddr, topic, c.sarama, want)
			got := saramaConsume(t, b.KafkaAddr, topic, len(want))
			// sarama reads a zero-length key or value as nil, so only the
			// bytes are compared, not null-ness.
			sameRecords(t, want, got, false)
			checkStoredCodec(t, b.KafkaAddr, topic, c.id, codecRecords)
		})
	}
}

func saramaProduce(t *testing.T, addr, topic string, codec sarama.CompressionCodec, recs []testRecord) {
	t.Helper()
	p, err := sarama.NewSyncProducer([]string{addr}, saramaConfig(codec))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, len(recs))
	for i, r := range recs {
		m := &sarama.ProducerMessage{Topic: topic, Partition: 0, Timestamp: r.Timestamp}
		if r.Key != nil {
			m.Key = sarama.ByteEncoder(r.Key)
		}
		if r.Value != nil {
			m.Value = sarama.ByteEncoder(r.Value)
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
		}
		msgs[i] = m
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatalf("sarama produce: %v", err)
	}
	for i, m := range msgs {
		if m.Offset != int64(i) {
			t.Fatalf("sarama: record %d acknowledged at offset %d", i, m.Offset)
		}
	}
}

func saramaConsume(t *testing.T, addr, topic string, n int) []testRecord {
	t.Helper()
	c, err := sarama.NewConsumer([]string{addr}, saramaConfig(sarama.CompressionNone))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	giveUp := time.After(bulkWaitMax)
	var got []testRecord
	for len(got) < n {
		select {
		case m := <-pc.Messages():
			if m.Offset != int64(len(got)) {
				t.Fatalf("sarama consumed offset %d after %d records", m.Offset, len(got))
			}
			r := testRecord{Key: m.Key, Value: m.Value, Timestamp: m.Timestamp}
			for _, h := range m.Headers {
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: string(h.Key), Value: h.Value})
			}
			got = append(got, r)
		case err := <-pc.Errors():
			t.Fatalf("sarama consume: %v", err)
		case <-giveUp:
			t.Fatalf("sarama consumed %d of %d records before giving up", len(got), n)
		}
	}
	return got
}

func TestKcatEveryCodec(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatal("kcat is not installed (make deps installs it): ", err)
	}
	b := start(t)
	for i, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "kcat-" + c.name
			makeTopic(t, b.KafkaAddr, topic, 1, nil)
			want := textRecords(uint64(300+i), codecRecords)
			var in bytes.Buffer
			for _, r := range want {
				fmt.Fprintf(&in, "%s:%s\n", r.Key, r.Value)
			}
			// librdkafka sends a batch uncompressed when compressing does
			// not shrink it, as a one-record batch often is: linger long
			// enough that kcat's batches hold many records even when a busy
			// machine slows its stdin reader.
			kcat(t, &in, "-b", b.KafkaAddr, "-P", "-t", topic, "-p", "0", "-K", ":", "-z", c.name, "-X", "linger.ms=500")
			out := kcat(t, nil, "-b", b.KafkaAddr, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q",
				"-X", "check.crcs=true", "-f", "%o %k:%s\n")
			sameRecords(t, want, parseKcatLines(t, out), false)
			checkStoredCodec(t, b.KafkaAddr, topic, c.id, codecRecords)
		})
	}
}

// kcat runs kcat with args and stdin and returns its standard output.
func kcat(t testing.TB, stdin *bytes.Buffer, args ...string) []byte {
	t.Helper()
	ctx := ctxFor(t, bulkWaitMax)
	cmd := exec.CommandContext(ctx, "kcat", args...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// parseKcatLines reads "offset key:value" lines and checks the offsets run
// 0, 1, 2, ...
func parseKcatLines(t testing.TB, out []byte) []testRecord {
	t.Helper()
	var got []testRecord
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		off, rest, ok := strings.Cut(sc.Text(), " ")
		key, value, ok2 := strings.Cut(rest, ":")
		if !ok || !ok2 {
			t.Fatalf("kcat line %d: %q is not `offset key:value`", len(got), sc.Text())
		}
		if o, err := strconv.ParseInt(off, 10, 64); err != nil || o != int64(len(got)) {
			t.Fatalf("kcat line %d has offset %q", len(got), off)
		}
		got = append(got, testRecord{Key: []byte(key), Value: []byte(value)})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}
