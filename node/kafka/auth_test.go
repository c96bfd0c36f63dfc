package kafka

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ksasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/floe-broker/floe/internal/pki"
	"github.com/floe-broker/floe/node/sasl"
)

// Test secrets: they must never appear in a log line or an error message.
const (
	alicePass = "al1ce-Pa55word!"
	wrongPass = "wr0ng-Gue55word!"
)

type memCreds map[string]sasl.ScramCredential

func (m memCreds) LookupScram(user, mech string) (sasl.ScramCredential, bool, error) {
	c, ok := m[user+"/"+mech]
	return c, ok, nil
}

// authFixture is a CA, a server certificate for 127.0.0.1, a client
// certificate, user alice with both SCRAM credentials, and a JWKS.
type authFixture struct {
	ca         *pki.CA
	server     tls.Certificate
	client     tls.Certificate
	creds      memCreds
	keys       *jose.JSONWebKeySet
	signer     jose.Signer
	logs       *syncBuffer
	logger     *slog.Logger
	authFailed *FailureDelay
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newAuthFixture(t *testing.T) *authFixture {
	t.Helper()
	f := &authFixture{creds: memCreds{}, logs: &syncBuffer{}}
	f.logger = slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.authFailed = NewFailureDelay(time.Millisecond, 4*time.Millisecond)
	var err error
	if f.ca, err = pki.NewCA("test CA"); err != nil {
		t.Fatal(err)
	}
	srv, err := f.ca.Issue(pki.Leaf{Subject: pkix.Name{CommonName: "broker"}, Hosts: []string{"127.0.0.1", "localhost"}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	cli, err := f.ca.Issue(pki.Leaf{Subject: pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}}, Client: true})
	if err != nil {
		t.Fatal(err)
	}
	f.server, _ = srv.TLS()
	f.client, _ = cli.TLS()
	for _, m := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
		c, err := sasl.FromPassword(m, alicePass, sasl.MinIterations, crand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		f.creds["alice/"+m] = c
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	data, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Algorithm: "ES256", Use: "sig"}}})
	if f.keys, err = sasl.ParseKeySet(data); err != nil {
		t.Fatal(err)
	}
	f.signer, _ = jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k"))
	return f
}

func (f *authFixture) token(t *testing.T, sub string, exp time.Time) string {
	t.Helper()
	tok, err := jwt.Signed(f.signer).Claims(jwt.Claims{Subject: sub, Issuer: "idp", Audience: jwt.Audience{"floe"},
		Expiry: jwt.NewNumericDate(exp), IssuedAt: jwt.NewNumericDate(time.Now().Add(-time.Minute))}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// config is a listener: TLS when useTLS (clientAuth for mTLS), SASL with
// every mechanism when useSASL.
func (f *authFixture) config(t *testing.T, name string, useTLS bool, clientAuth tls.ClientAuthType, useSASL bool) Config {
	t.Helper()
	cfg := Config{Versions: testVersions(), Listener: name, Logger: f.logger, AuthFailures: f.authFailed}
	if useTLS {
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{f.server}, ClientAuth: clientAuth, ClientCAs: f.ca.Pool(), MinVersion: tls.VersionTLS12}
	}
	if useSASL {
		srv, err := sasl.NewServer(sasl.Config{Mechanisms: sasl.AllMechanisms(), Credentials: f.creds, Rand: crand.Reader,
			OAuth: &sasl.OAuthConfig{Keys: func() *jose.JSONWebKeySet { return f.keys }, Issuer: "idp", Audience: "floe"}})
		if err != nil {
			t.Fatal(err)
		}
		cfg.SASL = srv
	}
	return cfg
}

func (f *authFixture) clientTLS(withCert bool) *tls.Config {
	c := &tls.Config{RootCAs: f.ca.Pool(), ServerName: "127.0.0.1"}
	if withCert {
		c.Certificates = []tls.Certificate{f.client}
	}
	return c
}

// produceWith runs a franz-go producer with opts and returns the first
// produce error.
func produceWith(t *testing.T, addr string, opts ...kgo.Opt) error {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("t"),
		kgo.RequestRetries(0), kgo.RetryTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 10 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord("v"+string(rune('0'+i)))).FirstErr(); err != nil {
			return err
		}
	}
	return nil
}

// requestWith sends one Metadata request with franz-go and returns its
// error.
func requestWith(t *testing.T, addr string, opts ...kgo.Opt) error {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = cl.Request(ctx, kmsg.NewPtrMetadataRequest())
	return err
}

// Every mechanism franz-go has, over TLS (SASL_SSL): the principal
// reaches the handler with the listener's name.
func TestSASLWithFranzGo(t *testing.T) {
	f := newAuthFixture(t)
	fb := newFakeBroker(false)
	_, addr := startServer(t, f.config(t, "SASL_SSL", true, tls.NoClientCert, true), fb)
	fb.setAddr(addr)
	mechs := map[string]ksasl.Mechanism{
		"PLAIN":         plain.Auth{User: "alice", Pass: alicePass}.AsMechanism(),
		"SCRAM-SHA-256": scram.Auth{User: "alice", Pass: alicePass}.AsSha256Mechanism(),
		"SCRAM-SHA-512": scram.Auth{User: "alice", Pass: alicePass}.AsSha512Mechanism(),
		"OAUTHBEARER":   oauth.Auth{Token: f.token(t, "alice", time.Now().Add(time.Hour))}.AsMechanism(),
	}
	for name, m := range mechs {
		t.Run(name, func(t *testing.T) {
			if err := produceWith(t, addr, kgo.DialTLSConfig(f.clientTLS(false)), kgo.SASL(m)); err != nil {
				t.Fatalf("produce: %v", err)
			}
		})
	}
	for _, ci := range fb.connInfos() {
		if ci.Principal != "User:alice" || ci.Listener != "SASL_SSL" {
			t.Fatalf("handler saw %+v", ci)
		}
	}
	if len(fb.connInfos()) == 0 {
		t.Fatal("no request reached the handler")
	}
}

// A wrong password, an unknown user and a token past its expiry get
// SASL_AUTHENTICATION_FAILED; nothing reaches the handler; no secret is
// in any log line or error message.
func TestSASLFailures(t *testing.T) {
	f := newAuthFixture(t)
	fb := newFakeBroker(false)
	obs := newCountingObserver()
	cfg := f.config(t, "SASL_PLAINTEXT", false, 0, true)
	cfg.Observer = obs
	_, addr := startServer(t, cfg, fb)
	fb.setAddr(addr)
	expired := f.token(t, "alice", time.Now().Add(-time.Hour))
	for name, m := range map[string]ksasl.Mechanism{
		"plain wrong password": plain.Auth{User: "alice", Pass: wrongPass}.AsMechanism(),
		"plain unknown user":   plain.Auth{User: "mallory", Pass: wrongPass}.AsMechanism(),
		"scram wrong password": scram.Auth{User: "alice", Pass: wrongPass}.AsSha512Mechanism(),
		"scram unknown user":   scram.Auth{User: "mallory", Pass: wrongPass}.AsSha256Mechanism(),
		"expired token":        oauth.Auth{Token: expired}.AsMechanism(),
	} {
		t.Run(name, func(t *testing.T) {
			err := requestWith(t, addr, kgo.SASL(m))
			if !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("err %v, want SASL_AUTHENTICATION_FAILED", err)
			}
			for _, secret := range []string{wrongPass, expired} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error %q shows a secret", err)
				}
			}
			if name == "expired token" && !strings.Contains(err.Error(), "expired") {
				t.Fatalf("error %q does not say the token expired", err)
			}
		})
	}
	if n := len(fb.connInfos()); n != 0 {
		t.Fatalf("%d connections reached the handler unauthenticated", n)
	}
	if obs.closedWith(ReasonAuthFailed) == 0 {
		t.Fatal("no connection closed for a failed authentication")
	}
	logs := f.logs.String()
	if !strings.Contains(logs, "authentication failed") {
		t.Fatalf("failures not logged:\n%s", logs)
	}
	for _, secret := range []string{wrongPass, alicePass, expired, "mallory"} {
		if strings.Contains(logs, secret) {
			t.Fatalf("the log holds %q:\n%s", secret, logs)
		}
	}
}

// The delay after a failure doubles with each recent failure from one
// address, up to its maximum, forgets after a quiet spell and after a
// success, and counts per address, not per connection.
func TestFailureDelay(t *testing.T) {
	d := NewFailureDelay(100*time.Millisecond, time.Second)
	now := time.Unix(1000, 0)
	var got []time.Duration
	for i := range 6 {
		got = append(got, d.Failed("10.0.0.1:"+string(rune('1'+i)), now))
	}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("delays %v, want %v ms", got, want)
		}
	}
	if d.Failed("10.0.0.2:1", now) != 100*time.Millisecond {
		t.Fatal("another address shares the count")
	}
	if d.Failed("10.0.0.1:9", now.Add(11*time.Minute)) != 100*time.Millisecond {
		t.Fatal("the count outlived its quiet spell")
	}
	d.Failed("10.0.0.1:9", now.Add(11*time.Minute))
	d.Succeeded("10.0.0.1:7")
	if d.Failed("10.0.0.1:9", now.Add(11*time.Minute)) != 100*time.Millisecond {
		t.Fatal("a success did not reset the count")
	}
	small := &FailureDelay{Base: time.Millisecond, Max: time.Second, Forget: time.Hour, MaxAddresses: 3}
	for i := range 10 {
		small.Failed(string(rune('a'+i)), now)
	}
	if len(small.byAddr) > 3 {
		t.Fatalf("%d addresses kept, cap 3", len(small.byAddr))
	}
}

// saslRaw is a raw client on a SASL listener.
func handshake(c *rawClient, version int16, mech string) *kmsg.SASLHandshakeResponse {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = version, mech
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	c.readInto(c.send(req), resp)
	return resp
}

func authenticate(c *rawClient, version int16, msg []byte) *kmsg.SASLAuthenticateResponse {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = version, msg
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	c.readInto(c.send(req), resp)
	return resp
}

func plainMsg(user, pass string) []byte { return []byte("\x00" + user + "\x00" + pass) }

// The sequence rules: nothing but ApiVersions and SASL before
// authentication; unknown mechanisms; requests out of order; malformed
// messages; raw v0 tokens; re-authentication; session expiry.
func TestSASLSequence(t *testing.T) {
	f := newAuthFixture(t)
	fb := newFakeBroker(false)
	obs := newCountingObserver()
	cfg := f.config(t, "SASL_PLAINTEXT", false, 0, true)
	cfg.Observer = obs
	_, addr := startServer(t, cfg, fb)
	fb.setAddr(addr)

	t.Run("request before authentication closes", func(t *testing.T) {
		c := dialRaw(t, addr)
		c.send(metadataV(9))
		c.expectClosed()
		c = dialRaw(t, addr)
		handshake(c, 1, "PLAIN")
		c.send(metadataV(9)) // handshake done, not authenticated
		c.expectClosed()
		eventually(t, "both closed as unauthenticated", func() bool { return obs.closedWith(ReasonUnauthenticated) == 2 })
		if len(fb.connInfos()) != 0 {
			t.Fatalf("handler saw %d connections", len(fb.connInfos()))
		}
	})
	t.Run("ApiVersions is served before authentication", func(t *testing.T) {
		c := dialRaw(t, addr)
		req := kmsg.NewPtrApiVersionsRequest()
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		c.readInto(c.send(req), resp)
		if resp.ErrorCode != 0 {
			t.Fatal(resp.ErrorCode)
		}
	})
	t.Run("unknown mechanism", func(t *testing.T) {
		c := dialRaw(t, addr)
		resp := handshake(c, 1, "GSSAPI")
		if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(resp.SupportedMechanisms, ",") != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER" {
			t.Fatalf("%+v", resp)
		}
		c.expectClosed()
	})
	t.Run("authenticate before handshake", func(t *testing.T) {
		c := dialRaw(t, addr)
		if resp := authenticate(c, 1, plainMsg("alice", alicePass)); resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("%+v", resp)
		}
		c.expectClosed()
	})
	t.Run("handshake twice", func(t *testing.T) {
		c := dialRaw(t, addr)
		handshake(c, 1, "PLAIN")
		if resp := handshake(c, 1, "PLAIN"); resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("%+v", resp)
		}
		c.expectClosed()
	})
	t.Run("malformed messages", func(t *testing.T) {
		for _, tc := range []struct {
			mech string
			msg  string
		}{
			{"SCRAM-SHA-256", "n,,n=alice"},
			{"SCRAM-SHA-512", "\x00\xff\xfe garbage"},
			{"SCRAM-SHA-256", ""},
			{"PLAIN", "no separators"},
			{"OAUTHBEARER", "n,,\x01auth=Basic Zm9v\x01\x01"},
		} {
			c := dialRaw(t, addr)
			if resp := handshake(c, 1, tc.mech); resp.ErrorCode != 0 {
				t.Fatalf("handshake %s: %d", tc.mech, resp.ErrorCode)
			}
			resp := authenticate(c, 2, []byte(tc.msg))
			if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage == "" {
				t.Fatalf("%s %q: %+v", tc.mech, tc.msg, resp)
			}
			c.expectClosed()
		}
	})
	t.Run("raw tokens after handshake v0", func(t *testing.T) {
		c := dialRaw(t, addr)
		if resp := handshake(c, 0, "PLAIN"); resp.ErrorCode != 0 {
			t.Fatal(resp.ErrorCode)
		}
		msg := plainMsg("alice", alicePass)
		c.write(binary.BigEndian.AppendUint32(nil, uint32(len(msg))))
		c.write(msg)
		var size [4]byte
		if _, err := io.ReadFull(c.br, size[:]); err != nil || binary.BigEndian.Uint32(size[:]) != 0 {
			t.Fatalf("raw answer: size %v, %v", size, err)
		}
		req := metadataV(9)
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		c.readInto(c.send(req), resp)
		if len(resp.Brokers) != 1 {
			t.Fatal("metadata after raw authentication")
		}
		// A wrong raw token closes without an answer.
		c = dialRaw(t, addr)
		handshake(c, 0, "PLAIN")
		msg = plainMsg("alice", wrongPass)
		c.write(append(binary.BigEndian.AppendUint32(nil, uint32(len(msg))), msg...))
		c.expectClosed()
	})
	t.Run("re-authentication", func(t *testing.T) {
		c := dialRaw(t, addr)
		handshake(c, 1, "PLAIN")
		if resp := authenticate(c, 1, plainMsg("alice", alicePass)); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 0 {
			t.Fatalf("%+v", resp)
		}
		// Again, in place, as KIP-368 clients do.
		handshake(c, 1, "PLAIN")
		if resp := authenticate(c, 1, plainMsg("alice", alicePass)); resp.ErrorCode != 0 {
			t.Fatalf("re-auth: %+v", resp)
		}
		req := metadataV(9)
		c.readInto(c.send(req), req.ResponseKind())
		// Another mechanism is refused.
		if resp := handshake(c, 1, "SCRAM-SHA-256"); resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code {
			t.Fatalf("%+v", resp)
		}
		c.expectClosed()
	})
}

// A session ends at connections.max.reauth.ms (told to the client), or at
// the token's exp if sooner; a request after the end closes the
// connection, a re-authentication before it extends the session.
func TestSessionLifetime(t *testing.T) {
	f := newAuthFixture(t)
	fb := newFakeBroker(false)
	obs := newCountingObserver()
	cfg := f.config(t, "SASL_PLAINTEXT", false, 0, true)
	cfg.Observer, cfg.ReauthMax = obs, 300*time.Millisecond
	_, addr := startServer(t, cfg, fb)
	fb.setAddr(addr)

	c := dialRaw(t, addr)
	handshake(c, 1, "PLAIN")
	resp := authenticate(c, 1, plainMsg("alice", alicePass))
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis <= 0 || resp.SessionLifetimeMillis > 300 {
		t.Fatalf("lifetime %d, want (0, 300]", resp.SessionLifetimeMillis)
	}
	time.Sleep(400 * time.Millisecond) // past the end, for sure
	c.send(metadataV(9))
	c.expectClosed()
	eventually(t, "closed as expired", func() bool { return obs.closedWith(ReasonSessionExpired) == 1 })

	// A token expiring before ReauthMax sets the lifetime.
	c = dialRaw(t, addr)
	handshake(c, 1, "OAUTHBEARER")
	tok := f.token(t, "alice", time.Now().Add(100*time.Second))
	cfg.ReauthMax = 0
	resp = authenticate(c, 1, []byte("n,,\x01auth=Bearer "+tok+"\x01\x01"))
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis > 300 {
		t.Fatalf("token session: %+v", resp)
	}
	_, addr2 := startServer(t, f.config(t, "SASL_PLAINTEXT", false, 0, true), fb)
	c = dialRaw(t, addr2)
	handshake(c, 1, "OAUTHBEARER")
	resp = authenticate(c, 1, []byte("n,,\x01auth=Bearer "+tok+"\x01\x01"))
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis < 90_000 || resp.SessionLifetimeMillis > 100_000 {
		t.Fatalf("without ReauthMax the token's exp sets the lifetime: %d ms", resp.SessionLifetimeMillis)
	}
}

// franz-go re-authenticates in place before the session ends (KIP-368)
// and keeps producing on the same connection.
func TestFranzGoReauthenticates(t *testing.T) {
	f := newAuthFixture(t)
	fb := newFakeBroker(false)
	obs := newCountingObserver()
	cfg := f.config(t, "SASL_SSL", true, tls.NoClientCert, true)
	cfg.Observer, cfg.ReauthMax = obs, time.Second
	_, addr := startServer(t, cfg, fb)
	fb.setAddr(addr)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("t"), kgo.DialTLSConfig(f.clientTLS(false)),
		kgo.SASL(scram.Auth{User: "alice", Pass: alicePass}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deadline := time.Now().Add(3 * time.Second) // three session lifetimes
	for time.Now().Before(deadline) {
		if err := cl.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr(); err != nil {
			t.Fatalf("produce across re-authentications: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := strings.Count(f.logs.String(), "kafka: authenticated"); n < 3 {
		t.Fatalf("%d authentications in three session lifetimes; want re-authentications", n)
	}
	if obs.closedWith(ReasonSessionExpired) != 0 {
		t.Fatal("a connection expired: the client did not re-authenticate in time")
	}
}

// TLS: garbage instead of a handshake closes that connection only; mTLS
// without a client certificate fails the handshake; with one, the
// principal is the certificate's subject (mapped by TLSPrincipal).
func TestTLSListener(t *testing.T) {
	f := newAuthFixture(t)
	fb := newFakeBroker(false)
	obs := newCountingObserver()
	cfg := f.config(t, "SSL", true, tls.RequireAndVerifyClientCert, false)
	cfg.Observer = obs
	mapper, err := sasl.ParsePrincipalMappingRules(`RULE:^CN=(.*?),OU=.*$/$1/L,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLSPrincipal = mapper.MapCertificate
	_, addr := startServer(t, cfg, fb)
	fb.setAddr(addr)

	// A plaintext Kafka request where a ClientHello belongs.
	c := dialRaw(t, addr)
	c.send(metadataV(9))
	c.expectClosed()
	eventually(t, "closed for the handshake", func() bool { return obs.closedWith(ReasonTLSHandshake) >= 1 })

	// No client certificate.
	if err := requestWith(t, addr, kgo.DialTLSConfig(f.clientTLS(false))); err == nil {
		t.Fatal("produced without a client certificate on a listener requiring one")
	}
	// TLS 1.1 is refused.
	old := f.clientTLS(true)
	old.MaxVersion = tls.VersionTLS11
	if err := requestWith(t, addr, kgo.DialTLSConfig(old)); err == nil {
		t.Fatal("produced over TLS 1.1")
	}
	if err := produceWith(t, addr, kgo.DialTLSConfig(f.clientTLS(true))); err != nil {
		t.Fatalf("mTLS produce: %v", err)
	}
	infos := fb.connInfos()
	if len(infos) == 0 || infos[0].Principal != "User:alice" || infos[0].Listener != "SSL" {
		t.Fatalf("handler saw %+v", infos)
	}
	// SASL on a listener without SASL: UNSUPPORTED_SASL_MECHANISM with no
	// mechanism (issue 22), then the connection closes.
	tc, err := tls.Dial("tcp", addr, f.clientTLS(true))
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	rc := &rawClient{t: t, nc: tc, br: newReader(tc)}
	if resp := handshake(rc, 1, "PLAIN"); resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(resp.SupportedMechanisms) != 0 {
		t.Fatalf("%+v", resp)
	}
	_ = tc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := tc.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection stayed open after a refused SaslHandshake")
	}
}

func newReader(r io.Reader) *bufio.Reader { return bufio.NewReader(r) }
