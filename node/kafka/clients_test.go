package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/floe-broker/floe/node/records"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var kgoCodecs = []struct {
	name  string
	codec kgo.CompressionCodec
}{
	{"none", kgo.NoCompression()},
	{"gzip", kgo.GzipCompression()},
	{"snappy", kgo.SnappyCompression()},
	{"lz4", kgo.Lz4Compression()},
	{"zstd", kgo.ZstdCompression()},
}

// franz-go negotiates ApiVersions (it opens with v5, is told v4 is the
// newest, retries), gets metadata, and produces with an idempotent
// producer keeping five requests in flight, while the fake answers them
// out of order. kgo checks every correlation ID, so a response written out
// of order fails the produce; offsets must come back as assigned in
// arrival order.
func TestFranzGoProducePipelined(t *testing.T) {
	for i, tc := range kgoCodecs {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeBroker(true)
			obs := newCountingObserver()
			_, addr := startServer(t, Config{Versions: testVersions(), Observer: obs}, f)
			f.setAddr(addr)
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("t"),
				kgo.ProducerBatchCompression(tc.codec), kgo.ProducerBatchMaxBytes(2<<10),
				kgo.ProducerLinger(0))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()

			// franz-go, like librdkafka, sends a batch uncompressed when
			// compressing does not shrink it. A loaded machine can make it
			// send batches of one record, so each record carries a run of
			// 200 or more bytes that every codec shrinks even alone (with
			// kgo.MaxBufferedRecords(1), shorter values came back partly
			// uncompressed under all four codecs; these do not).
			const n = 3000
			offsets := make([]int64, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			wg.Add(n)
			for i := range n {
				rec := &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, "value %d %s", i, strings.Repeat("x", 200+i%50))}
				cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
					offsets[i], errs[i] = r.Offset, err
					wg.Done()
				})
			}
			wg.Wait()
			for i := range n {
				if errs[i] != nil {
					t.Fatalf("record %d: %v", i, errs[i])
				}
				if offsets[i] != int64(i) {
					t.Fatalf("record %d at offset %d", i, offsets[i])
				}
			}
			if got := f.accepted(); got != n {
				t.Fatalf("fake accepted %d records, want %d", got, n)
			}
			f.sawOnly(t, records.Codec(i), false)
			checkSoftware(t, f, "kgo")
			if got := obs.requestsFor(0); got < 20 {
				t.Fatalf("only %d produce requests: too few to have pipelined", got)
			}
		})
	}
}

// checkSoftware checks ApiVersions v3+ recorded the client's software.
func checkSoftware(t *testing.T, f *fakeBroker, name string) {
	t.Helper()
	for _, c := range f.connInfos() {
		if c.ClientSoftwareName == name && c.ClientSoftwareVersion != "" && c.ID > 0 && c.Remote != "" {
			return
		}
	}
	t.Fatalf("no connection recorded client software %q: %+v", name, f.connInfos())
}

func TestSaramaProduce(t *testing.T) {
	codecs := []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP,
		sarama.CompressionSnappy, sarama.CompressionLZ4, sarama.CompressionZSTD}
	for _, codec := range codecs {
		t.Run(codec.String(), func(t *testing.T) {
			f := newFakeBroker(true)
			_, addr := startServer(t, Config{Versions: testVersions()}, f)
			f.setAddr(addr)
			cfg := sarama.NewConfig()
			cfg.Version = sarama.V3_0_0_0 // ApiVersions v3, Produce v7+
			cfg.ClientID = "sarama-test"
			cfg.Producer.Return.Successes = true
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Compression = codec
			cfg.Producer.Flush.MaxMessages = 10 // many requests, pipelined (5 open)
			p, err := sarama.NewSyncProducer([]string{addr}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			const n = 500
			msgs := make([]*sarama.ProducerMessage, n)
			for i := range msgs {
				msgs[i] = &sarama.ProducerMessage{Topic: "t", Partition: 0, Value: sarama.StringEncoder(fmt.Sprintf("sarama %d", i))}
			}
			if err := p.SendMessages(msgs); err != nil {
				t.Fatal(err)
			}
			last := int64(-1)
			for i, m := range msgs {
				if m.Offset <= last {
					t.Fatalf("message %d at offset %d after %d", i, m.Offset, last)
				}
				last = m.Offset
			}
			if got := f.accepted(); got != n {
				t.Fatalf("fake accepted %d records, want %d", got, n)
			}
			f.sawOnly(t, records.Codec(codec), false)
			checkSoftware(t, f, "sarama")
			for _, c := range f.connInfos() {
				if c.ClientID != "sarama-test" {
					t.Fatalf("client ID %q", c.ClientID)
				}
			}
		})
	}
}

// kcat (librdkafka 2.0.2 in Debian) lists metadata and produces with each
// codec. librdkafka enables features by finding exact versions in the
// table (src/rdkafka_feature.c): zstd needs Produce 7 and Fetch 10, lz4
// needs FindCoordinator 0 (it stands for "broker >= 0.8.2"). Without them
// it silently sends those batches uncompressed, so both are advertised
// here, though kcat -P never sends either request.
func TestKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat not installed")
	}
	f := newFakeBroker(false)
	versions := append(testVersions(), ApiRange{Key: 1, MinVersion: 4, MaxVersion: 12}, // Fetch
		ApiRange{Key: 10, MinVersion: 0, MaxVersion: 0}) // FindCoordinator
	_, addr := startServer(t, Config{Versions: versions}, f)
	f.setAddr(addr)

	out, err := exec.Command(kcat, "-b", addr, "-L", "-J", "-m", "10").Output()
	if err != nil {
		t.Fatalf("kcat -L: %v", err)
	}
	var md struct {
		Brokers []struct{ Name string }
		Topics  []struct{ Topic string }
	}
	if err := json.Unmarshal(out, &md); err != nil {
		t.Fatalf("kcat -L output %q: %v", out, err)
	}
	if len(md.Brokers) != 1 || !strings.HasPrefix(md.Brokers[0].Name, addr) || len(md.Topics) != 1 || md.Topics[0].Topic != "t" {
		t.Fatalf("kcat metadata: %+v", md)
	}

	const lines = 200
	input := strings.Repeat("hello from kcat\n", lines)
	for i, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		cmd := exec.Command(kcat, "-b", addr, "-P", "-t", "t", "-p", "0", "-z", codec, "-X", "acks=all", "-m", "10")
		cmd.Stdin = strings.NewReader(input)
		if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), "ERROR") {
			t.Fatalf("kcat -P -z %s: %v\n%s", codec, err, out)
		}
		if got := f.accepted(); got != lines*(i+1) {
			t.Fatalf("after %s: fake accepted %d records, want %d", codec, got, lines*(i+1))
		}
		f.sawOnly(t, records.Codec(i), true)
	}
	checkSoftware(t, f, "librdkafka")
}

// kgo's admin-style requests, one at a time, keep working: used by the
// bad-input tests as the well-behaved neighbour.
func metadataLoop(ctx context.Context, t *testing.T, addr string) (done func() int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		ok  int
		bad error
	)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for ctx.Err() == nil {
			req := kmsg.NewPtrMetadataRequest()
			_, err := req.RequestWith(ctx, cl)
			mu.Lock()
			if err == nil {
				ok++
			} else if ctx.Err() == nil && bad == nil {
				bad = err
			}
			mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	}()
	return func() int {
		<-stopped
		cl.Close()
		mu.Lock()
		defer mu.Unlock()
		if bad != nil {
			t.Fatalf("well-behaved client failed: %v", bad)
		}
		return ok
	}
}

func TestMain(m *testing.M) {
	sarama.Logger = nopLogger{}
	os.Exit(m.Run())
}

type nopLogger struct{}

func (nopLogger) Print(...any)          {}
func (nopLogger) Printf(string, ...any) {}
func (nopLogger) Println(...any)        {}
