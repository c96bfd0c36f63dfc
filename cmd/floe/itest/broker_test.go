package itest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// floeBin is the floe binary TestMain builds once for every test; it is
// also the harness's default (Binary).
var floeBin string

// buildDir holds the binaries the tests build; TestMain removes it.
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "floe-itest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	floeBin, err = Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "itest:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	Binary = floeBin
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// broker is the consumer-group tests' view of a harness Broker: small
// group timeouts and a few shortcuts.
type broker struct {
	*Broker
	kafkaAddr string
	adminAddr string
}

// startBroker starts a single-node broker with small group timeouts
// (initial rebalance delay 100ms, minimum session timeout 1s) and stops it
// when the test ends. extra flags are appended to floe serve's.
func startBroker(t testing.TB, extra ...string) *broker {
	t.Helper()
	b := StartBroker(t, WithFlags(append([]string{"--group-initial-rebalance-delay-ms", "100",
		"--group-min-session-timeout-ms", "1000"}, extra...)...))
	return &broker{Broker: b, kafkaAddr: b.KafkaAddr, adminAddr: b.AdminAddr}
}

// stop shuts the broker down cleanly (SIGTERM).
func (b *broker) stop() { b.Stop() }

// kill crashes the broker (SIGKILL): only what it had fsynced survives.
func (b *broker) kill() { b.Kill() }

// restart starts the broker again on the same data and addresses.
func (b *broker) restart() { b.Restart() }

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
