package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// startNATS runs a JetStream-enabled nats-server on a free port for the
// test, or skips when the binary is not installed (make bench installs it).
func startNATS(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		if _, statErr := os.Stat("/usr/sbin/nats-server"); statErr != nil {
			t.Skip("nats-server not installed (apt-get install nats-server)")
		}
		bin = "/usr/sbin/nats-server"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	body := fmt.Sprintf("listen: 127.0.0.1:%d\njetstream { store_dir: %q }\n", port, filepath.Join(dir, "js"))
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", conf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	for range 100 {
		if nc, err := nats.Connect(url); err == nil {
			nc.Close()
			return url
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nats-server on %s did not come up", url)
	return ""
}

func natsConfig(url string) NATSConfig {
	return NATSConfig{URL: url, Stream: "bench", Subject: "bench.data", Replicas: 1, Storage: "file", Recreate: true,
		MessageBytes: 100, Count: 3000, Publishers: 2, Window: 256, DrainTimeout: 30 * time.Second}
}

func streamMessages(t *testing.T, url, stream string) uint64 {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func TestNATSPublishCountsEveryAck(t *testing.T) {
	url := startNATS(t)
	for _, size := range []int{100, 4} { // 4 bytes: the stamp travels in a header
		cfg := natsConfig(url)
		cfg.MessageBytes = size
		res, err := RunNATS(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Err(); err != nil {
			t.Fatal(err)
		}
		p := res.Produce
		if p.Messages != 3000 || p.Bytes != int64(3000*size) || p.Latency == nil || p.Latency.Count != 3000 {
			t.Fatalf("size %d: %+v", size, p)
		}
		if p.Latency.MaxMs > float64(time.Hour/time.Millisecond) {
			t.Fatalf("size %d: latency %v ms: stamp not read back", size, p.Latency.MaxMs)
		}
		// Recreate emptied the stream, so it holds exactly this run.
		if got := streamMessages(t, url, "bench"); got != 3000 {
			t.Fatalf("size %d: stream holds %d messages, want 3000", size, got)
		}
	}
}

func TestNATSOpenLoopWithWarmup(t *testing.T) {
	url := startNATS(t)
	cfg := natsConfig(url)
	cfg.Count, cfg.Warmup, cfg.Duration, cfg.RatePerSec = 0, 100*time.Millisecond, 300*time.Millisecond, 3000
	res, err := RunNATS(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 3000 msg/s for 0.4 s is 1200 sent; about 900 after the warmup.
	total := streamMessages(t, url, "bench")
	if n := res.Produce.Messages; n == 0 || n > 901 || uint64(n) >= total || total > 1201 {
		t.Fatalf("measured %d of %d in the stream, want 1..901 of at most 1201", n, total)
	}
}

func TestNATSValidate(t *testing.T) {
	good := natsConfig("nats://127.0.0.1:1")
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*NATSConfig){
		"url":        func(c *NATSConfig) { c.URL = " " },
		"stream":     func(c *NATSConfig) { c.Stream = "a.b" },
		"subject":    func(c *NATSConfig) { c.Subject = "a.*" },
		"replicas":   func(c *NATSConfig) { c.Replicas = 0 },
		"storage":    func(c *NATSConfig) { c.Storage = "tape" },
		"size":       func(c *NATSConfig) { c.MessageBytes = -1 },
		"no end":     func(c *NATSConfig) { c.Count = 0 },
		"publishers": func(c *NATSConfig) { c.Publishers = 0 },
		"window":     func(c *NATSConfig) { c.Window = 0 },
		"rate":       func(c *NATSConfig) { c.RatePerSec = -1 },
	} {
		c := good
		mutate(&c)
		if _, err := RunNATS(context.Background(), c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
