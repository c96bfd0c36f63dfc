package itest

// Issue 22: clients that ask for what Floe does not serve fail loudly. A
// SASL client gets a SASL error from the broker (and the broker logs it);
// TLS, HTTP and other protocols on the plaintext Kafka port are logged at
// info level with the client's address, once per client host.

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// logLines returns the lines of b's log that contain s.
func logLines(t *testing.T, b *Broker, s string) []string {
	t.Helper()
	data, err := os.ReadFile(b.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// wantLoggedOnce waits until b's log holds exactly one info line with msg
// and the client's address.
func wantLoggedOnce(t *testing.T, b *Broker, msg string) {
	t.Helper()
	waitFor(t, 10*time.Second, "log line "+msg, func() bool { return len(logLines(t, b, msg)) > 0 })
	got := logLines(t, b, msg)
	if len(got) != 1 || !strings.Contains(got[0], "level=INFO") || !strings.Contains(got[0], "remote=127.0.0.1:") {
		t.Fatalf("log lines with %q: %q; want one, at info, with the client's address", msg, got)
	}
}

func TestSaslClientsGetSaslErrors(t *testing.T) {
	b := start(t, WithBinary(floeBin), WithLogLevel("info"))

	// franz-go: UNSUPPORTED_SASL_MECHANISM from the handshake.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.KafkaAddr), kgo.SASL(plain.Auth{User: "u", Pass: "p"}.AsMechanism()),
		kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	err = cl.Ping(ctxFor(t, 20*time.Second))
	cl.Close()
	if err == nil || !strings.Contains(err.Error(), "UNSUPPORTED_SASL_MECHANISM") {
		t.Errorf("franz-go with SASL PLAIN: %v, want UNSUPPORTED_SASL_MECHANISM", err)
	}

	// librdkafka (kcat): the handshake fails, naming the mechanism.
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatal("kcat is not installed (make deps installs it): ", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "kcat", "-b", b.KafkaAddr, "-L", "-m", "3", "-X", "security.protocol=sasl_plaintext",
		"-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=u", "-X", "sasl.password=p")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "Unsupported SASL mechanism") {
		t.Errorf("kcat with SASL PLAIN: %v\n%s\nwant a handshake failure naming an unsupported SASL mechanism", err, stderr.String())
	}

	// kafka-python opens with SaslHandshake v0: it logs the broker's
	// UNSUPPORTED_SASL_MECHANISM (then, having no other broker, raises
	// NoBrokersAvailable).
	requirePython(t, "kafka")
	out := runPython(t, kafkaPythonSasl, b.KafkaAddr)
	if !strings.Contains(out, "UnsupportedSaslMechanismError") {
		t.Errorf("kafka-python with SASL PLAIN said:\n%s\nwant UnsupportedSaslMechanismError", out)
	}

	wantLoggedOnce(t, b, "client asked for SASL authentication (PLAIN) on a listener without SASL")
}

const kafkaPythonSasl = `
import logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(levelname)s %(name)s %(message)s")
from kafka import KafkaProducer
try:
    KafkaProducer(bootstrap_servers=sys.argv[1], security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                  sasl_plain_username="u", sasl_plain_password="p", api_version_auto_timeout_ms=5000)
    print("connected")
except Exception as e:
    print("raised %s: %s" % (type(e).__name__, e))
`

func TestForeignProtocolsOnKafkaPort(t *testing.T) {
	b := start(t, WithBinary(floeBin), WithLogLevel("info"))
	for i := 0; i < 2; i++ { // a client retrying is still logged once
		nc, err := net.DialTimeout("tcp", b.KafkaAddr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
		if err := tls.Client(nc, &tls.Config{InsecureSkipVerify: true}).Handshake(); err == nil {
			t.Fatal("a TLS handshake with the plaintext Kafka port succeeded")
		}
		nc.Close()
		hc := &http.Client{Timeout: 20 * time.Second}
		if resp, err := hc.Get("http://" + b.KafkaAddr + "/"); err == nil {
			resp.Body.Close()
			t.Fatal("an HTTP request to the Kafka port got an HTTP answer")
		}
	}
	wantLoggedOnce(t, b, "client is speaking TLS on a plaintext listener")
	wantLoggedOnce(t, b, "client is speaking HTTP on a Kafka listener")
	// The broker still serves Kafka clients.
	if err := kgoClient(t, b.KafkaAddr).Ping(ctxFor(t, 20*time.Second)); err != nil {
		t.Fatalf("ping after the probes: %v", err)
	}
}
