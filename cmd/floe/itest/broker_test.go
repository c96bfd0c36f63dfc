// Package itest runs real Kafka clients (franz-go, sarama, kcat) against a
// real `floe serve` process.
package itest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// floeBin is the floe binary TestMain builds once for every test.
var floeBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "floe-itest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	floeBin = filepath.Join(dir, "floe")
	build := exec.Command("go", "build", "-o", floeBin, "github.com/floe-broker/floe/cmd/floe")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "itest: building floe:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// broker is one `floe serve` process on free local ports with its own data
// directory, which survives restarts.
type broker struct {
	t         testing.TB
	dataDir   string
	kafkaAddr string
	adminAddr string
	extra     []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
}

// startBroker starts a single-node broker with small group timeouts
// (initial rebalance delay 100ms, minimum session timeout 1s) and stops it
// when the test ends. extra flags are appended to floe serve's.
func startBroker(t testing.TB, extra ...string) *broker {
	t.Helper()
	b := &broker{
		t: t, dataDir: t.TempDir(), kafkaAddr: freeAddr(t), adminAddr: freeAddr(t),
		extra: append([]string{"--group-initial-rebalance-delay-ms", "100", "--group-min-session-timeout-ms", "1000"}, extra...),
	}
	b.start()
	t.Cleanup(b.stop)
	return b
}

// freeAddr returns a local address nobody listens on right now.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func (b *broker) start() {
	b.t.Helper()
	args := append([]string{"serve", "--data-dir", b.dataDir, "--kafka-addr", b.kafkaAddr,
		"--admin-addr", b.adminAddr, "--log-level", "warn"}, b.extra...)
	log, err := os.OpenFile(filepath.Join(b.dataDir, "..", "floe.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		b.t.Fatal(err)
	}
	cmd := exec.Command(floeBin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		b.t.Fatalf("start floe: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	b.mu.Lock()
	b.cmd, b.done, b.log = cmd, done, log
	b.mu.Unlock()
	b.waitReady()
}

// waitReady polls /readyz until the broker can serve clients.
func (b *broker) waitReady() {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-b.done:
			b.t.Fatalf("floe serve exited while starting; log:\n%s", b.logTail())
		default:
		}
		resp, err := http.Get("http://" + b.adminAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.t.Fatalf("floe serve not ready after 30s; log:\n%s", b.logTail())
}

func (b *broker) logTail() string {
	data, _ := os.ReadFile(filepath.Join(b.dataDir, "..", "floe.log"))
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// signal sends sig and waits for the process to exit.
func (b *broker) signal(sig syscall.Signal) {
	b.mu.Lock()
	cmd, done := b.cmd, b.done
	b.cmd = nil
	b.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	b.log.Close()
}

// stop shuts the broker down cleanly (SIGTERM).
func (b *broker) stop() { b.signal(syscall.SIGTERM) }

// kill crashes the broker (SIGKILL): only what it had fsynced survives.
func (b *broker) kill() { b.signal(syscall.SIGKILL) }

// restart starts the broker again on the same data and addresses.
func (b *broker) restart() { b.start() }

// client returns a franz-go client for the broker, closed with the test.
func (b *broker) client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.kafkaAddr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// admin returns a kadm client for the broker.
func (b *broker) admin(t testing.TB) *kadm.Client { return kadm.NewClient(b.client(t)) }

// createTopic creates a topic with replication factor 1.
func (b *broker) createTopic(t testing.TB, name string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := b.admin(t).CreateTopic(ctx, partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
}

// produce writes values to one partition of a topic (acks=all) and waits.
func (b *broker) produce(t testing.TB, topic string, partition int32, values ...string) {
	t.Helper()
	cl := b.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v)}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s-%d: %v", topic, partition, err)
	}
}

// floe runs the floe binary with args and returns its standard output.
func floe(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(floeBin, args...).Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("floe %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}

// eventually retries cond every 50ms until it holds or wait passes; it
// bounds how long a test waits, it does not assert a speed.
func eventually(t testing.TB, wait time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", wait, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sigterm asks a child process to stop cleanly.
var sigterm = syscall.SIGTERM
