package kafka

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// logBuffer is a slog destination tests can read while the server writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) lines(containing string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.buf.String(), "\n") {
		if strings.Contains(line, containing) {
			out = append(out, line)
		}
	}
	return out
}

func probeServer(t *testing.T) (string, *logBuffer, *countingObserver) {
	logs := &logBuffer{}
	obs := newCountingObserver()
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	f := newFakeBroker(false)
	_, addr := startServer(t, Config{Versions: testVersions(), Observer: obs, Logger: logger}, f)
	f.setAddr(addr)
	return addr, logs, obs
}

// A client that opens with SaslHandshake is told no mechanism is enabled,
// then the connection closes; the attempt is logged once per client host.
func TestSaslHandshakeRefused(t *testing.T) {
	addr, logs, obs := probeServer(t)
	for i, version := range []int16{0, 1, 1} {
		c := dialRaw(t, addr)
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version, req.Mechanism = version, "PLAIN"
		corr := c.send(req)
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.Version = version
		c.readInto(corr, resp)
		if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(resp.SupportedMechanisms) != 0 {
			t.Fatalf("v%d: error %v, mechanisms %q; want UNSUPPORTED_SASL_MECHANISM and none",
				version, kerr.ErrorForCode(resp.ErrorCode), resp.SupportedMechanisms)
		}
		if i > 0 {
			// A client that closes after the answer; the first one does
			// not, and the server closes after saslLinger.
			c.nc.(*net.TCPConn).CloseWrite()
		}
		c.expectClosed()
	}
	eventually(t, "closes counted", func() bool { return obs.closedWith(ReasonUnsupportedSASL) == 3 })
	if got := logs.lines("SASL"); len(got) != 1 || !strings.Contains(got[0], "level=INFO") || !strings.Contains(got[0], "remote=127.0.0.1:") {
		t.Fatalf("SASL log lines %q, want one at info with the client's address", got)
	}
}

// The first bytes of other protocols close the connection with a log line
// at info level saying which protocol the client speaks, once per host.
func TestForeignProtocolsLogged(t *testing.T) {
	addr, logs, obs := probeServer(t)
	tlsHello := func() {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(20 * time.Second)) // hang guard
		tc := tls.Client(nc, &tls.Config{InsecureSkipVerify: true})
		if err := tc.Handshake(); err == nil {
			t.Fatal("a TLS handshake with a plaintext listener succeeded")
		}
	}
	httpGet := func() {
		cl := &http.Client{Timeout: 20 * time.Second}
		if resp, err := cl.Get("http://" + addr + "/"); err == nil {
			resp.Body.Close()
			t.Fatal("an HTTP request to a Kafka listener got an HTTP answer")
		}
	}
	raw := func(b []byte) func() {
		return func() {
			c := dialRaw(t, addr)
			c.write(b)
			c.expectClosed()
		}
	}
	cases := []struct {
		name string
		send func()
		want string
	}{
		{"tls", tlsHello, "client is speaking TLS on a plaintext listener"},
		{"http", httpGet, "client is speaking HTTP on a Kafka listener"},
		{"http2", raw([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")), "client is speaking HTTP/2 on a Kafka listener"},
		{"proxy v1", raw([]byte("PROXY TCP4 10.0.0.1 10.0.0.2 5000 9092\r\n")), "PROXY protocol header"},
		{"ssh", raw([]byte("SSH-2.0-OpenSSH_9.2\r\n")), "client is speaking SSH on a Kafka listener"},
		{"mqtt", raw([]byte("\x10\x10\x00\x04MQTT\x04\x02\x00\x3c\x00\x04abcd")), "client is speaking MQTT on a Kafka listener"},
		{"postgres", raw([]byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}), "client is speaking PostgreSQL on a Kafka listener"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := obs.closedWith(ReasonForeignProtocol)
			tc.send()
			tc.send() // a client retrying: still one line
			eventually(t, "closes counted", func() bool { return obs.closedWith(ReasonForeignProtocol) >= before+2 })
			got := logs.lines(tc.want)
			if len(got) != 1 || !strings.Contains(got[0], "level=INFO") || !strings.Contains(got[0], "remote=127.0.0.1:") {
				t.Fatalf("log lines %q, want one at info with the client's address", got)
			}
		})
	}
	// A Kafka client on the same host is unaffected.
	c := dialRaw(t, addr)
	corr := c.send(metadataV(1))
	c.readInto(corr, kmsg.NewPtrMetadataResponse())
}

func TestForeignProtocolPatterns(t *testing.T) {
	kafka := [][]byte{
		frame(3, 1, 1, nil), frame(18, 3, 7, nil), {0, 0, 0, 8},
		{0x00, 0x00, 0x01, 0x00}, {0x16, 0x00, 0x00, 0x00},
	}
	for _, b := range kafka {
		if what := foreignProtocol(b); what != "" {
			t.Errorf("% x taken for %q", b, what)
		}
	}
	if foreignProtocol([]byte{0x16, 0x03, 0x01, 0x02, 0x00}) == "" || foreignProtocol([]byte{0x80, 0x2e, 0x01, 0x03, 0x01}) == "" {
		t.Error("TLS records not recognised")
	}
}
