package runtime

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-broker/floe/node"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func startBroker(t *testing.T, dir string) *Broker {
	t.Helper()
	b, err := Start(Options{DataDir: dir, KafkaAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
		Node: node.Config{NodeID: 1}, Logger: quietLogger()})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return b
}

// httpClient keeps no idle connections, so nothing of the test's own
// lingers when goroutines are counted.
var httpClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

func get(t *testing.T, b *Broker, path string) (int, string) {
	t.Helper()
	resp, err := httpClient.Get("http://" + b.AdminAddr() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(body)
}

// waitReady polls /readyz until the broker says it is ready.
func waitReady(t *testing.T, b *Broker) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		code, body := get(t, b, "/readyz")
		if code == http.StatusOK {
			if body != "ready\n" {
				t.Fatalf("/readyz body %q", body)
			}
			return
		}
		if code != http.StatusServiceUnavailable || body == "" {
			t.Fatalf("/readyz while not ready: %d %q; want 503 with a reason", code, body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// client talks Kafka to b whatever address the metadata advertises (the
// node's default 127.0.0.1:9092, not the port the test bound).
func client(t testing.TB, b *Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	addr := b.KafkaAddr()
	var d net.Dialer
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr),
		kgo.Dialer(func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		})}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func scrape(t *testing.T, b *Broker) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, b, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	return fams
}

// value returns the value of the family's metric whose labels include
// want, and whether there is one.
func value(f *dto.MetricFamily, want map[string]string) (float64, bool) {
	if f == nil {
		return 0, false
	}
	for _, m := range f.Metric {
		match := 0
		for _, lp := range m.Label {
			if v, ok := want[lp.GetName()]; ok && v == lp.GetValue() {
				match++
			}
		}
		if match != len(want) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// A single-node broker on real sockets and a temporary data directory:
// health and readiness, metrics after a produce, the data directory lock,
// a clean shutdown that leaves no goroutine behind, and a restart that
// finds its data.
func TestBrokerLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real broker")
	}
	baseline := goruntime.NumGoroutine()
	dir := t.TempDir()
	b := startBroker(t, dir)
	shut := false
	defer func() {
		if !shut {
			_ = b.Shutdown(context.Background())
		}
	}()

	if code, body := get(t, b, "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	waitReady(t, b)

	// A reactor that does not answer is unhealthy.
	release := make(chan struct{})
	b.loop.post(func() { <-release })
	code, body := get(t, b, "/healthz")
	close(release)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "not responding") {
		t.Fatalf("/healthz with the reactor stuck: %d %q, want 503", code, body)
	}
	if code, _ := get(t, b, "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz after the reactor recovered: %d", code)
	}

	// A second broker on the same directory is refused while the first
	// runs, and says why.
	if b2, err := Start(Options{DataDir: dir, KafkaAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
		Node: node.Config{NodeID: 1}, Logger: quietLogger()}); err == nil {
		_ = b2.Shutdown(context.Background())
		t.Fatalf("a second broker started on a data directory in use")
	} else if !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second start: %v; want an error saying the directory is in use", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cl := client(t, b)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		cl.Close()
		t.Fatalf("create topic: %v", err)
	}
	for i := 0; i < 3; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			cl.Close()
			t.Fatalf("produce: %v", err)
		}
	}
	cl.Close()

	fams := scrape(t, b)
	for name := range fams {
		// kafka_* are kafka_exporter's names (metrics_partitions.go).
		if !strings.HasPrefix(name, "floe_") && !strings.HasPrefix(name, "kafka_") {
			t.Errorf("metric %s does not start with floe_ or kafka_", name)
		}
	}
	tp := map[string]string{"topic": "t", "partition": "0"}
	for _, c := range []struct {
		family string
		labels map[string]string
		min    float64
	}{
		{"floe_partition_high_watermark", tp, 3},
		{"floe_partition_log_end_offset", tp, 3},
		{"floe_partition_leader", tp, 1},
		{"floe_produce_records_total", nil, 3},
		{"floe_requests_total", map[string]string{"api": "Produce"}, 3},
		{"floe_request_duration_seconds", map[string]string{"api": "Produce"}, 3},
		{"floe_fsync_duration_seconds", nil, 1},
		{"floe_sync_rounds_total", nil, 1},
	} {
		v, ok := value(fams[c.family], c.labels)
		if !ok || v < c.min {
			t.Errorf("%s%v = %v (present %v), want at least %v", c.family, c.labels, v, ok, c.min)
		}
	}
	if _, ok := fams["floe_connections"]; !ok {
		t.Errorf("floe_connections missing")
	}

	if err := b.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	shut = true
	checkGoroutines(t, baseline)

	// The lock went with the broker, and the data stayed.
	b = startBroker(t, dir)
	shut = false
	waitReady(t, b)
	deadline := time.Now().Add(waitTimeout)
	for {
		v, ok := value(scrape(t, b)["floe_partition_high_watermark"], tp)
		if ok && v == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after restart: high watermark %v (present %v), want 3", v, ok)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := b.Shutdown(ctx); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
	shut = true
}

// checkGoroutines waits for the goroutine count to come back near the
// baseline (a few may still be on their way out), and lists them if it
// does not.
func checkGoroutines(t *testing.T, baseline int) {
	t.Helper()
	const slack = 3
	deadline := time.Now().Add(waitTimeout)
	for goruntime.NumGoroutine() > baseline+slack {
		if time.Now().After(deadline) {
			var sb strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&sb, 1)
			t.Fatalf("%d goroutines after shutdown, %d before:\n%s", goruntime.NumGoroutine(), baseline, sb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A data directory that cannot be created fails Start with an error.
func TestStartBadDataDir(t *testing.T) {
	file := t.TempDir() + "/file"
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(Options{DataDir: file + "/sub", KafkaAddr: "127.0.0.1:0", Node: node.Config{NodeID: 1}, Logger: quietLogger()}); err == nil {
		t.Fatalf("started on a data directory under a file")
	}
}

// An admin address already taken fails Start and releases the data
// directory.
func TestStartAdminAddrInUse(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real broker")
	}
	baseline := goruntime.NumGoroutine()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	if b, err := Start(Options{DataDir: dir, KafkaAddr: "127.0.0.1:0", AdminAddr: ln.Addr().String(),
		Node: node.Config{NodeID: 1}, Logger: quietLogger()}); err == nil {
		_ = b.Shutdown(context.Background())
		t.Fatalf("started with the admin address taken")
	}
	checkGoroutines(t, baseline) // a failed start stops what it started
	b := startBroker(t, dir)     // and releases the lock
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestSplitHostPort(t *testing.T) {
	for _, tc := range []struct {
		in   string
		host string
		port int32
		ok   bool
	}{
		{"127.0.0.1:9092", "127.0.0.1", 9092, true},
		{"[::1]:1", "::1", 1, true},
		{"h:65535", "h", 65535, true},
		{"h:0", "", 0, false},
		{"h:65536", "", 0, false},
		{"h:-1", "", 0, false},
		{"h:x", "", 0, false},
		{"h", "", 0, false},
	} {
		host, port, err := SplitHostPort(tc.in)
		if (err == nil) != tc.ok || host != tc.host || port != tc.port {
			t.Errorf("SplitHostPort(%q) = %q %d %v", tc.in, host, port, err)
		}
	}
}

// A start that fails before the event loop runs (the peer address taken,
// a bad TLS file) returns its error: closeEarly used to wait for a loop
// that had never started, and Start hung for ever.
func TestStartFailsBeforeTheLoopRuns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for name, opts := range map[string]Options{
		"raft address taken": {RaftAddr: ln.Addr().String()},
		"no such certificate": {Listeners: []Listener{{Name: "SSL", Protocol: ProtocolSSL, Addr: "127.0.0.1:0"}},
			Security: Security{TLS: TLSFiles{CertFile: "/nonexistent.crt", KeyFile: "/nonexistent.key"}}},
		"SASL without mechanisms": {Listeners: []Listener{{Name: "SASL_PLAINTEXT", Protocol: ProtocolSASLPlaintext, Addr: "127.0.0.1:0"}}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			opts.DataDir, opts.KafkaAddr, opts.Node, opts.Logger = dir, "127.0.0.1:0", node.Config{NodeID: 1}, quietLogger()
			done := make(chan error, 1)
			go func() {
				b, err := Start(opts)
				if err == nil {
					_ = b.Shutdown(context.Background())
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("started")
				}
			case <-time.After(30 * time.Second): // a hang guard, not a speed check
				t.Fatal("Start did not return")
			}
			b := startBroker(t, dir) // the lock was released
			if err := b.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
