package ui_test

import (
	"context"
	"crypto/rand"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/floe-broker/floe/internal/pki"
	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/group"
	"github.com/floe-broker/floe/node/runtime"
	"github.com/floe-broker/floe/node/sasl"
)

// waitTimeout bounds every wait of these tests.
const waitTimeout = 60 * time.Second

// advertised is the address the test brokers' metadata names (the node
// default); clients dial the bound listener instead.
const advertised = "127.0.0.1:9092"

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testBroker is an in-process broker with the admin server (and so the
// UI) on a loopback port.
type testBroker struct {
	*runtime.Broker
	kafka string // the bound Kafka listener the test's clients use
}

type brokerOpts struct {
	secure bool              // SASL_PLAINTEXT with SCRAM and PLAIN, the ACL authorizer, User:admin a super user
	users  map[string]string // bootstrap users (secure only)
	tls    bool              // with secure: SASL_SSL, and a PLAINTEXT listener beside it
	audit  bool              // the audit log (__audit_log) on
}

func startBroker(t *testing.T, o brokerOpts) *testBroker {
	t.Helper()
	opts := runtime.Options{DataDir: t.TempDir(), KafkaAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", Logger: quietLogger(),
		Node: node.Config{NodeID: 1, Groups: group.Config{InitialRebalanceDelay: -1, SessionTimeoutMin: time.Second}}}
	listener := runtime.ProtocolPlaintext
	if o.secure {
		listener = runtime.ProtocolSASLPlaintext
		opts.Listeners = []runtime.Listener{{Name: listener, Protocol: runtime.ProtocolSASLPlaintext, Addr: "127.0.0.1:0"}}
		if o.tls {
			listener = runtime.ProtocolSASLSSL
			opts.Listeners = []runtime.Listener{
				{Name: runtime.ProtocolPlaintext, Protocol: runtime.ProtocolPlaintext, Addr: freeAddr(t)},
				{Name: listener, Protocol: runtime.ProtocolSASLSSL, Addr: "127.0.0.1:0"}}
			opts.Security.TLS = serverCert(t)
		}
		opts.Security.SASLMechanisms = []string{sasl.ScramSHA256, sasl.Plain}
		opts.Security.AuthFailureDelay, opts.Security.AuthFailureDelayMax = time.Millisecond, 10*time.Millisecond
		opts.Node.Security = node.SecurityConfig{Authorizer: "acl", SuperUsers: []string{"User:admin"}}
		for name, pass := range o.users {
			opts.Node.BootstrapUsers = append(opts.Node.BootstrapUsers, scramUser(t, name, pass))
		}
	}
	opts.Node.Security.Audit.Enabled = o.audit
	b, err := runtime.Start(opts)
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	})
	tb := &testBroker{Broker: b, kafka: b.ListenerAddr(listener)}
	waitReady(t, tb)
	return tb
}

// freeAddr is a loopback address with a port free a moment ago (two
// listeners may not both say port 0).
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// serverCert writes a CA and a server certificate for 127.0.0.1.
func serverCert(t *testing.T) runtime.TLSFiles {
	dir := t.TempDir()
	ca, err := pki.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ca.Issue(pki.Leaf{Subject: pkix.Name{CommonName: "broker"}, Hosts: []string{"127.0.0.1"}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := p.Write(dir, "broker")
	if err != nil {
		t.Fatal(err)
	}
	caFile, err := ca.WriteCA(dir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	return runtime.TLSFiles{CertFile: cert, KeyFile: key, CAFile: caFile}
}

func scramUser(t *testing.T, name, pass string) controller.User {
	u := controller.User{Name: name}
	for _, m := range []int8{controller.MechanismScramSHA256, controller.MechanismScramSHA512} {
		mech := sasl.ScramSHA256
		if m == controller.MechanismScramSHA512 {
			mech = sasl.ScramSHA512
		}
		c, err := sasl.FromPassword(mech, pass, 4096, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		u.Scram = append(u.Scram, controller.ScramCredential{Mechanism: m, Salt: c.Salt, Iterations: int32(c.Iterations),
			StoredKey: c.StoredKey, ServerKey: c.ServerKey})
	}
	return u
}

func (b *testBroker) ui() string { return "http://" + b.AdminAddr() }

// waitReady polls /readyz, bounded.
func waitReady(t *testing.T, b *testBroker) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		resp, err := http.Get(b.ui() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker not ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// client is a Kafka client of the test broker (dialing the bound address
// whatever metadata advertises), as user when given.
func (b *testBroker) client(t *testing.T, user, pass string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	addr := b.kafka
	var d net.Dialer
	base := []kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(3), kgo.RetryTimeout(10 * time.Second),
		kgo.Dialer(func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		})}
	if user != "" {
		base = append(base, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// browser is a cookie-keeping HTTP client that does not follow redirects.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (br *browser) do(method, path string, form url.Values, hdr map[string]string) (int, http.Header, string) {
	br.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, br.base+path, body)
	if err != nil {
		br.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := br.c.Do(req)
	if err != nil {
		br.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func (br *browser) get(path string) (int, string) {
	code, _, body := br.do(http.MethodGet, path, nil, nil)
	return code, body
}

func (br *browser) post(path string, form url.Values) (int, http.Header, string) {
	return br.do(http.MethodPost, path, form, nil)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// withValue is a copy of form with key set to value.
func withValue(form url.Values, key, value string) url.Values {
	out := url.Values{}
	for k, v := range form {
		out[k] = v
	}
	out.Set(key, value)
	return out
}

// without is a copy of form without key.
func without(form url.Values, key string) url.Values {
	out := withValue(form, key, "")
	out.Del(key)
	return out
}

// postChanged posts good to path once per change (a name: {key, value}),
// with that one value changed, and reports each answer that ok refuses
// (want says what ok wants).
func postChanged(t *testing.T, br *browser, path string, good url.Values, changes map[string][2]string, want string, ok func(code int, body string) bool) {
	t.Helper()
	for name, change := range changes {
		code, _, body := br.post(path, withValue(good, change[0], change[1]))
		if !ok(code, body) {
			t.Errorf("%s: %d, want %s\n%.600s", name, code, want, between(body, `role="alert"`, "</div>"))
		}
	}
}

// csrf reads the CSRF token from a page.
func csrf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in page:\n%.2000s", page)
	}
	return m[1]
}

// setGroupConfigs sets a group's configs (IncrementalAlterConfigs).
func setGroupConfigs(t *testing.T, ctx context.Context, cl *kgo.Client, group string, kv ...string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter group configs of %s: %v %+v", group, err, resp)
	}
}

// deadLetter makes share group group (dead-letter topic dlq) reject the
// record of key "bad" and accept the rest of values, produced to topic
// (one partition, created here), and waits until dlq holds the copy.
func deadLetter(t *testing.T, b *testBroker, group, topic, dlq string, keys ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	admin := b.client(t, "", "")
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	setGroupConfigs(t, ctx, admin, group, "share.auto.offset.reset", "earliest", "errors.deadletterqueue.topic.name", dlq)
	for _, k := range keys {
		rec := &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(`{"order":"` + k + `"}`),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t-" + k)}}}
		if err := admin.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	cl := b.client(t, "", "", kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond))
	for {
		if ctx.Err() != nil {
			t.Fatalf("no dead letter in %s before the deadline", dlq)
		}
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			if string(r.Key) == "bad" {
				r.Ack(kgo.AckReject)
			} else {
				r.Ack(kgo.AckAccept)
			}
		})
		cl.FlushAcks(pctx)
		pcancel()
		ends, err := adm.ListEndOffsets(ctx, dlq)
		if err == nil {
			if o, ok := ends.Lookup(dlq, 0); ok && o.Err == nil && o.Offset > 0 {
				return
			}
		}
	}
}
