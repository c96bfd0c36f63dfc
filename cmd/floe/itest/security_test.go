package itest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
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
)

// The secrets of the security tests: none may appear in the broker's log.
const (
	adminPass = "adm1n-Secret!"
	alicePass = "al1ce secret with spaces"
	wrongPass = "n0t-the-Password"
)

// secBroker is one broker with every kind of listener, users admin and
// alice from --bootstrap-users, a JWKS for OAUTHBEARER, and the CA and
// client certificate the clients need, all made at run time.
type secBroker struct {
	*Broker
	dir                                 string
	ca                                  *pki.CA
	caFile, certFile, keyFile           string // the broker's
	aliceCert, aliceKey                 string // a client certificate: CN=alice,OU=eng
	saslSSL, ssl, saslPlaintext, plain  string // listener addresses
	signer                              jose.Signer
	jwksFile, adminProps, brokerKeyFile string
}

func startSecBroker(t *testing.T, extra ...string) *secBroker {
	t.Helper()
	s := &secBroker{dir: t.TempDir()}
	var err error
	if s.ca, err = pki.NewCA("floe itest CA"); err != nil {
		t.Fatal(err)
	}
	s.caFile = must(s.ca.WriteCA(s.dir, "ca"))
	srv, err := s.ca.Issue(pki.Leaf{Subject: pkix.Name{CommonName: "broker"}, Hosts: []string{"127.0.0.1", "localhost"}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.certFile, s.keyFile, err = srv.Write(s.dir, "broker"); err != nil {
		t.Fatal(err)
	}
	alice, err := s.ca.Issue(pki.Leaf{Subject: pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}}, Client: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.aliceCert, s.aliceKey, err = alice.Write(s.dir, "alice"); err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "itest", Algorithm: "ES256", Use: "sig"}}})
	s.jwksFile = filepath.Join(s.dir, "jwks.json")
	writeFile(t, s.jwksFile, string(jwks))
	s.signer, _ = jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "itest"))
	users := filepath.Join(s.dir, "users.txt")
	writeFile(t, users, "# first users\nadmin "+adminPass+"\nalice "+alicePass+"\n")

	s.saslSSL, s.ssl, s.saslPlaintext, s.plain = FreeAddr(t), FreeAddr(t), FreeAddr(t), FreeAddr(t)
	flags := append([]string{
		"--tls-cert-file", s.certFile, "--tls-key-file", s.keyFile, "--tls-client-ca-file", s.caFile,
		"--tls-client-auth", "requested", "--ssl-principal-mapping-rules", `RULE:^CN=(.*?),OU=.*$/$1/L,DEFAULT`,
		"--sasl-mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"--oauth-jwks-file", s.jwksFile, "--oauth-issuer", "https://idp.test", "--oauth-audience", "floe",
		"--bootstrap-users", users, "--super-users", "User:admin",
	}, extra...)
	s.Broker = StartBroker(t, WithLogLevel("debug"), WithFlags(flags...), WithListeners(fmt.Sprintf(
		"SASL_SSL://%s,SSL://%s,SASL_PLAINTEXT://%s,PLAINTEXT://%s", s.saslSSL, s.ssl, s.saslPlaintext, s.plain)))
	s.adminProps = s.props(t, "admin", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=admin\nsasl.password="+adminPass+"\n")
	// The bootstrap users are applied once the controller runs: wait.
	eventually(t, 30*time.Second, "the bootstrap users", func() bool {
		return s.try(kgo.DialTLSConfig(s.tls(false)), kgo.SASL(scram.Auth{User: "admin", Pass: adminPass}.AsSha512Mechanism())) == nil
	})
	return s
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

func writeFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// props writes a client properties file with the CA added.
func (s *secBroker) props(t testing.TB, name, text string) string {
	p := filepath.Join(s.dir, name+".properties")
	writeFile(t, p, text+"ssl.ca.location="+s.caFile+"\n")
	return p
}

// tls is a client TLS config, with alice's certificate when withCert.
func (s *secBroker) tls(withCert bool) *tls.Config {
	c := &tls.Config{RootCAs: s.ca.Pool(), MinVersion: tls.VersionTLS12}
	if withCert {
		cert, err := tls.LoadX509KeyPair(s.aliceCert, s.aliceKey)
		if err != nil {
			panic(err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c
}

// token signs a JWT for sub, expiring at exp.
func (s *secBroker) token(t testing.TB, sub string, exp time.Time) string {
	t.Helper()
	tok, err := jwt.Signed(s.signer).Claims(jwt.Claims{Subject: sub, Issuer: "https://idp.test", Audience: jwt.Audience{"floe"},
		Expiry: jwt.NewNumericDate(exp), IssuedAt: jwt.NewNumericDate(time.Now().Add(-time.Minute))}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// try sends one Metadata request through the SASL_SSL listener (or the
// first seed in opts) and returns its error.
func (s *secBroker) try(opts ...kgo.Opt) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.saslSSL), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err = cl.Request(ctx, kmsg.NewPtrMetadataRequest())
	return err
}

// roundTrip creates topic (through the PLAINTEXT listener), produces
// value to it and reads it back with franz-go.
func (s *secBroker) roundTrip(t *testing.T, seed, topic, value string, opts ...kgo.Opt) {
	t.Helper()
	makeTopic(t, s.plain, topic, 1, nil)
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seed), kgo.DefaultProduceTopic(topic),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxFor(t, 30*time.Second)
	if err := cl.ProduceSync(ctx, kgo.StringRecord(value)).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume %s: %v", topic, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("consume: %v", errs[0].Err)
		}
		found := false
		fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == value })
		if found {
			return
		}
	}
}

// The one broker all security tests share: it is started once.
func TestSecurity(t *testing.T) {
	t.Parallel()
	s := startSecBroker(t)
	t.Run("franz-go", func(t *testing.T) { secFranzGo(t, s) })
	t.Run("sarama", func(t *testing.T) { secSarama(t, s) })
	t.Run("kcat", func(t *testing.T) { secKcat(t, s) })
	t.Run("confluent-kafka-python", func(t *testing.T) { secPython(t, s) })
	t.Run("floe-cli", func(t *testing.T) { secCLI(t, s) })
	t.Run("bad-input", func(t *testing.T) { secBadInput(t, s) })
	t.Run("cert-reload", func(t *testing.T) { secCertReload(t, s) })
	// Last: no secret in the log of everything above.
	t.Run("no-secret-logged", func(t *testing.T) {
		log, err := os.ReadFile(s.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{adminPass, alicePass, wrongPass, "b0b-Pa55", "eyJ"} {
			if bytes.Contains(log, []byte(secret)) {
				t.Fatalf("the broker log holds %q", secret)
			}
		}
		if !bytes.Contains(log, []byte("authentication failed")) || !bytes.Contains(log, []byte("principal=User:alice")) {
			t.Fatal("the log lacks the authentication lines the tests expect (is --log-level debug on?)")
		}
	})
}

func secFranzGo(t *testing.T, s *secBroker) {
	mechs := map[string]ksasl.Mechanism{
		"PLAIN":         plain.Auth{User: "alice", Pass: alicePass}.AsMechanism(),
		"SCRAM-SHA-256": scram.Auth{User: "alice", Pass: alicePass}.AsSha256Mechanism(),
		"SCRAM-SHA-512": scram.Auth{User: "alice", Pass: alicePass}.AsSha512Mechanism(),
		"OAUTHBEARER":   oauth.Auth{Token: s.token(t, "alice", time.Now().Add(time.Hour))}.AsMechanism(),
	}
	for name, m := range mechs {
		t.Run("SASL_SSL "+name, func(t *testing.T) {
			s.roundTrip(t, s.saslSSL, "franz-"+name, "v-"+name, kgo.DialTLSConfig(s.tls(false)), kgo.SASL(m))
		})
		t.Run("SASL_PLAINTEXT "+name, func(t *testing.T) {
			s.roundTrip(t, s.saslPlaintext, "franz-plain-"+name, "v-"+name, kgo.SASL(m))
		})
	}
	t.Run("mTLS", func(t *testing.T) {
		s.roundTrip(t, s.ssl, "franz-mtls", "v-mtls", kgo.DialTLSConfig(s.tls(true)))
	})
	// Metadata names each listener's own addresses.
	t.Run("metadata per listener", func(t *testing.T) {
		for addr, opts := range map[string][]kgo.Opt{
			s.saslSSL: {kgo.DialTLSConfig(s.tls(false)), kgo.SASL(mechs["PLAIN"])},
			s.ssl:     {kgo.DialTLSConfig(s.tls(true))},
			s.plain:   nil,
		} {
			cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxFor(t, 15*time.Second), cl)
			cl.Close()
			if err != nil || len(resp.Brokers) != 1 {
				t.Fatalf("%s: %v", addr, err)
			}
			if got := net.JoinHostPort(resp.Brokers[0].Host, fmt.Sprint(resp.Brokers[0].Port)); got != addr {
				t.Fatalf("metadata through %s names %s", addr, got)
			}
		}
	})
}

// saramaSCRAM is a SCRAM client for sarama (which asks its user for one):
// RFC 5802 over crypto/pbkdf2, hashing the raw password bytes as Kafka's
// clients do.
type saramaSCRAM struct {
	h                       func() hash.Hash
	user, pass, cnonce      string
	clientFirst, authSigB64 string
	step                    int
}

func (c *saramaSCRAM) Begin(user, pass, _ string) error {
	b := make([]byte, 18)
	rand.Read(b)
	c.user, c.pass, c.cnonce, c.step = user, pass, base64.RawURLEncoding.EncodeToString(b), 0
	return nil
}

func (c *saramaSCRAM) Step(challenge string) (string, error) {
	c.step++
	switch c.step {
	case 1:
		c.clientFirst = "n=" + strings.NewReplacer("=", "=3D", ",", "=2C").Replace(c.user) + ",r=" + c.cnonce
		return "n,," + c.clientFirst, nil
	case 2:
		attrs := map[string]string{}
		for _, f := range strings.Split(challenge, ",") {
			k, v, _ := strings.Cut(f, "=")
			attrs[k] = v
		}
		salt, _ := base64.StdEncoding.DecodeString(attrs["s"])
		var iters int
		fmt.Sscan(attrs["i"], &iters)
		salted, err := pbkdf2.Key(c.h, c.pass, salt, iters, c.h().Size())
		if err != nil {
			return "", err
		}
		mac := func(key []byte, msg string) []byte { m := hmac.New(c.h, key); m.Write([]byte(msg)); return m.Sum(nil) }
		clientKey := mac(salted, "Client Key")
		stored := c.h()
		stored.Write(clientKey)
		withoutProof := "c=biws,r=" + attrs["r"]
		authMsg := c.clientFirst + "," + challenge + "," + withoutProof
		sig := mac(stored.Sum(nil), authMsg)
		for i := range clientKey {
			clientKey[i] ^= sig[i]
		}
		c.authSigB64 = base64.StdEncoding.EncodeToString(mac(mac(salted, "Server Key"), authMsg))
		return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(clientKey), nil
	default:
		if challenge != "v="+c.authSigB64 {
			return "", errors.New("server signature mismatch")
		}
		return "", nil
	}
}

func (c *saramaSCRAM) Done() bool { return c.step >= 3 }

type saramaToken string

func (tok saramaToken) Token() (*sarama.AccessToken, error) {
	return &sarama.AccessToken{Token: string(tok)}, nil
}

func secSarama(t *testing.T, s *secBroker) {
	type setup struct {
		addr string
		cfg  func(*sarama.Config)
	}
	sasl := func(mech sarama.SASLMechanism, h func() hash.Hash) func(*sarama.Config) {
		return func(c *sarama.Config) {
			c.Net.TLS.Enable, c.Net.TLS.Config = true, s.tls(false)
			c.Net.SASL.Enable, c.Net.SASL.Mechanism = true, mech
			c.Net.SASL.User, c.Net.SASL.Password = "alice", alicePass
			if h != nil {
				c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{h: h} }
			}
		}
	}
	token := s.token(t, "alice", time.Now().Add(time.Hour))
	for name, st := range map[string]setup{
		"SASL_SSL PLAIN":         {s.saslSSL, sasl(sarama.SASLTypePlaintext, nil)},
		"SASL_SSL SCRAM-SHA-256": {s.saslSSL, sasl(sarama.SASLTypeSCRAMSHA256, sha256.New)},
		"SASL_SSL SCRAM-SHA-512": {s.saslSSL, sasl(sarama.SASLTypeSCRAMSHA512, sha512.New)},
		"SASL_SSL OAUTHBEARER": {s.saslSSL, func(c *sarama.Config) {
			c.Net.TLS.Enable, c.Net.TLS.Config = true, s.tls(false)
			c.Net.SASL.Enable, c.Net.SASL.Mechanism, c.Net.SASL.TokenProvider = true, sarama.SASLTypeOAuth, saramaToken(token)
		}},
		"mTLS": {s.ssl, func(c *sarama.Config) { c.Net.TLS.Enable, c.Net.TLS.Config = true, s.tls(true) }},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := saramaConfig(sarama.CompressionNone)
			st.cfg(cfg)
			topic := "sarama-" + strings.ReplaceAll(strings.ReplaceAll(name, " ", "-"), "_", "-")
			makeTopic(t, s.plain, topic, 1, nil)
			p, err := sarama.NewSyncProducer([]string{st.addr}, cfg)
			if err != nil {
				t.Fatalf("sarama producer: %v", err)
			}
			_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder("hello")})
			p.Close()
			if err != nil {
				t.Fatalf("sarama produce: %v", err)
			}
			c, err := sarama.NewConsumer([]string{st.addr}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			select {
			case m := <-pc.Messages():
				if string(m.Value) != "hello" {
					t.Fatalf("read %q", m.Value)
				}
			case err := <-pc.Errors():
				t.Fatal(err)
			case <-time.After(30 * time.Second):
				t.Fatal("sarama read nothing in 30s")
			}
		})
	}
	// A wrong password fails cleanly.
	cfg := saramaConfig(sarama.CompressionNone)
	sasl(sarama.SASLTypeSCRAMSHA512, sha512.New)(cfg)
	cfg.Net.SASL.Password = wrongPass
	cfg.Metadata.Retry.Max = 0
	if _, err := sarama.NewClient([]string{s.saslSSL}, cfg); err == nil {
		t.Fatal("sarama connected with a wrong password")
	}
}

func secKcat(t *testing.T, s *secBroker) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatal("kcat is not installed (make deps installs it): ", err)
	}
	common := []string{"-X", "ssl.ca.location=" + s.caFile}
	saslSSL := func(mech string) []string {
		return append([]string{"-b", s.saslSSL, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=" + mech,
			"-X", "sasl.username=alice", "-X", "sasl.password=" + alicePass}, common...)
	}
	for name, args := range map[string][]string{
		"SASL_SSL PLAIN":         saslSSL("PLAIN"),
		"SASL_SSL SCRAM-SHA-256": saslSSL("SCRAM-SHA-256"),
		"SASL_SSL SCRAM-SHA-512": saslSSL("SCRAM-SHA-512"),
		"mTLS": append([]string{"-b", s.ssl, "-X", "security.protocol=SSL", "-X", "ssl.certificate.location=" + s.aliceCert,
			"-X", "ssl.key.location=" + s.aliceKey}, common...),
	} {
		t.Run(name, func(t *testing.T) {
			topic := "kcat-" + strings.NewReplacer(" ", "-", "_", "-").Replace(name)
			makeTopic(t, s.plain, topic, 1, nil)
			kcat(t, bytes.NewBufferString("k:"+name+"\n"), append(args, "-P", "-t", topic, "-p", "0", "-K", ":")...)
			out := kcat(t, nil, append(args, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%k:%s\n")...)
			if string(out) != "k:"+name+"\n" {
				t.Fatalf("read back %q", out)
			}
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		cmd := exec.CommandContext(ctxFor(t, 30*time.Second), "kcat",
			"-b", s.saslSSL, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-256",
			"-X", "sasl.username=alice", "-X", "sasl.password="+wrongPass, "-X", "ssl.ca.location="+s.caFile, "-L")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "authentication failed: invalid credentials") {
			t.Fatalf("kcat with a wrong password: %v\n%s", err, out)
		}
	})
	// Debian's librdkafka has no OIDC (no libcurl), so kcat can only send
	// the unsigned tokens of sasl.oauthbearer.config: refused here (see
	// TestOAuthUnsignedDevelopment for the development flag).
	t.Run("unsigned token refused", func(t *testing.T) {
		cmd := exec.CommandContext(ctxFor(t, 30*time.Second), "kcat", "-b", s.saslSSL, "-X", "security.protocol=SASL_SSL",
			"-X", "sasl.mechanisms=OAUTHBEARER", "-X", "enable.sasl.oauthbearer.unsecure.jwt=true",
			"-X", "sasl.oauthbearer.config=principal=alice", "-X", "ssl.ca.location="+s.caFile, "-L", "-m", "5")
		out, err := cmd.CombinedOutput()
		log, _ := os.ReadFile(s.LogPath)
		if err == nil || !bytes.Contains(log, []byte("token is not a signed JWT")) {
			t.Fatalf("kcat with an unsigned token: %v\n%s", err, out)
		}
	})
}

// TestOAuthUnsignedDevelopment: with --oauth-allow-unsigned-tokens (and
// only then, see TestSecurity/kcat), kcat's unsigned OAUTHBEARER token
// (sasl.oauthbearer.config) authenticates.
func TestOAuthUnsignedDevelopment(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatal("kcat is not installed (make deps installs it): ", err)
	}
	addr := FreeAddr(t)
	b := StartBroker(t, WithLogLevel("info"), WithListeners("SASL_PLAINTEXT://"+addr), WithFlags("--sasl-mechanisms", "OAUTHBEARER", "--oauth-allow-unsigned-tokens"))
	args := []string{"-b", b.KafkaAddr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=OAUTHBEARER",
		"-X", "enable.sasl.oauthbearer.unsecure.jwt=true", "-X", "sasl.oauthbearer.config=principal=alice"}
	kcat(t, bytes.NewBufferString("dev\n"), append(args, "-P", "-t", "dev", "-p", "0")...)
	if out := kcat(t, nil, append(args, "-C", "-t", "dev", "-p", "0", "-o", "beginning", "-e", "-q")...); string(out) != "dev\n" {
		t.Fatalf("read back %q", out)
	}
}

// pythonClient produces and consumes one message per configuration with
// confluent-kafka (librdkafka underneath), the OAuth token from an
// oauth_cb.
const pythonClient = `
import json, os, sys, time
from confluent_kafka import Consumer, Producer

cfgs = json.loads(os.environ["FLOE_CONFIGS"])
token = os.environ["FLOE_TOKEN"]
for name, cfg in sorted(cfgs.items()):
    if cfg.get("sasl.mechanisms") == "OAUTHBEARER":
        cfg["oauth_cb"] = lambda _: (token, time.time() + 3600)
    topic = "python-" + name
    errs = []
    p = Producer(dict(cfg))
    p.produce(topic, value=name.encode(), partition=0, on_delivery=lambda err, msg: errs.append(err))
    if p.flush(30) != 0 or errs != [None]:
        sys.exit("%s: produce failed: %s" % (name, errs))
    c = Consumer(dict(cfg, **{"group.id": "g-" + name, "auto.offset.reset": "earliest"}))
    c.subscribe([topic])
    deadline = time.time() + 60
    got = None
    while got is None and time.time() < deadline:
        m = c.poll(1.0)
        if m is not None and m.error() is None:
            got = m.value().decode()
    c.close()
    if got != name:
        sys.exit("%s: consumed %r" % (name, got))
    print("ok", name)
`

func secPython(t *testing.T, s *secBroker) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Fatal("/usr/bin/python3 is missing (apt-get install python3-confluent-kafka)")
	}
	sasl := func(mech string) map[string]string {
		return map[string]string{"bootstrap.servers": s.saslSSL, "security.protocol": "SASL_SSL", "ssl.ca.location": s.caFile,
			"sasl.mechanisms": mech, "sasl.username": "alice", "sasl.password": alicePass}
	}
	cfgs := map[string]map[string]string{
		"plain": sasl("PLAIN"), "scram256": sasl("SCRAM-SHA-256"), "scram512": sasl("SCRAM-SHA-512"),
		"oauth": {"bootstrap.servers": s.saslSSL, "security.protocol": "SASL_SSL", "ssl.ca.location": s.caFile, "sasl.mechanisms": "OAUTHBEARER"},
		"mtls": {"bootstrap.servers": s.ssl, "security.protocol": "SSL", "ssl.ca.location": s.caFile,
			"ssl.certificate.location": s.aliceCert, "ssl.key.location": s.aliceKey},
	}
	js, _ := json.Marshal(cfgs)
	script := filepath.Join(s.dir, "client.py")
	writeFile(t, script, pythonClient)
	cmd := exec.CommandContext(ctxFor(t, 150*time.Second), "/usr/bin/python3", script)
	cmd.Env = append(os.Environ(), "FLOE_CONFIGS="+string(js), "FLOE_TOKEN="+s.token(t, "alice", time.Now().Add(time.Hour)))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("confluent-kafka: %v\n%s", err, out)
	}
	for name := range cfgs {
		if !strings.Contains(string(out), "ok "+name+"\n") {
			t.Fatalf("confluent-kafka: no %q in\n%s", name, out)
		}
	}
}

// floeIn runs the floe binary with stdin and returns its output and error.
func floeIn(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctxFor(t, 60*time.Second), floeBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The CLI through --command-config: user admin creates bob, bob works
// with SCRAM and PLAIN, is listed, is deleted, then is refused.
func secCLI(t *testing.T, s *secBroker) {
	const bobPass = "b0b-Pa55"
	admin := []string{"--brokers", s.saslSSL, "--command-config", s.adminProps}
	if out, err := floeIn(t, bobPass+"\n", append([]string{"user", "create", "bob", "--password-stdin"}, admin...)...); err != nil {
		t.Fatalf("floe user create: %v\n%s", err, out)
	}
	out, err := floeIn(t, "", append([]string{"user", "list"}, admin...)...)
	var rows []string
	for _, line := range strings.Split(out, "\n") {
		rows = append(rows, strings.Join(strings.Fields(line), " "))
	}
	listed := strings.Join(rows, "\n")
	for _, want := range []string{"bob SCRAM-SHA-256 8192", "bob SCRAM-SHA-512 8192", "alice SCRAM-SHA-512 8192", "admin SCRAM-SHA-256 8192"} {
		if err != nil || !strings.Contains(listed, want) {
			t.Fatalf("floe user list: %v: no %q in\n%s", err, want, out)
		}
	}
	bob := s.props(t, "bob", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="`+bobPass+`";`+"\n")
	bobPlain := s.props(t, "bobplain", "security.protocol=SASL_SSL\nsasl.mechanisms=PLAIN\nsasl.username=bob\nsasl.password="+bobPass+"\n")
	for _, props := range []string{bob, bobPlain} {
		if out, err := floeIn(t, "hi-from-bob\n", "produce", "--topic", "cli-bob", "--brokers", s.saslSSL, "--command-config", props); err != nil {
			t.Fatalf("floe produce as bob: %v\n%s", err, out)
		}
	}
	out, err = floeIn(t, "", "consume", "--topic", "cli-bob", "--from-beginning", "--count", "2", "--brokers", s.saslSSL, "--command-config", bob)
	if err != nil || strings.Count(out, "hi-from-bob") != 2 {
		t.Fatalf("floe consume as bob: %v\n%s", err, out)
	}
	mtls := s.props(t, "mtls", "security.protocol=SSL\nssl.certificate.location="+s.aliceCert+"\nssl.key.location="+s.aliceKey+"\n")
	if out, err := floeIn(t, "", "topic", "list", "--brokers", s.ssl, "--command-config", mtls); err != nil || !strings.Contains(out, "cli-bob") {
		t.Fatalf("floe topic list over mTLS: %v\n%s", err, out)
	}
	if out, err := floeIn(t, "", append([]string{"user", "delete", "bob"}, admin...)...); err != nil {
		t.Fatalf("floe user delete: %v\n%s", err, out)
	}
	out, err = floeIn(t, "", "topic", "list", "--brokers", s.saslSSL, "--command-config", bob, "--timeout", "5s")
	if err == nil || !strings.Contains(out, "SASL_AUTHENTICATION_FAILED") || strings.Contains(out, bobPass) {
		t.Fatalf("a deleted user still works, or the error shows the password: %v\n%s", err, out)
	}
	// A password on the command line is refused; an empty one too.
	if out, err := floeIn(t, "", append([]string{"user", "create", "carol"}, admin...)...); err == nil {
		t.Fatalf("user create without --password-stdin: %s", out)
	}
}

func secBadInput(t *testing.T, s *secBroker) {
	t.Run("wrong password", func(t *testing.T) {
		err := s.try(kgo.DialTLSConfig(s.tls(false)), kgo.SASL(scram.Auth{User: "alice", Pass: wrongPass}.AsSha512Mechanism()))
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || strings.Contains(err.Error(), wrongPass) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("expired token", func(t *testing.T) {
		tok := s.token(t, "alice", time.Now().Add(-time.Hour))
		err := s.try(kgo.DialTLSConfig(s.tls(false)), kgo.SASL(oauth.Auth{Token: tok}.AsMechanism()))
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "expired") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("unauthenticated request closes", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", s.saslPlaintext, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, kmsg.NewPtrMetadataRequest(), 1))
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if n, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Fatalf("read %d bytes, %v: want the connection closed", n, err)
		}
	})
	t.Run("TLS garbage", func(t *testing.T) {
		for _, addr := range []string{s.saslSSL, s.ssl} {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			c.Write(bytes.Repeat([]byte("\x16\x03\x01garbage"), 100))
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			buf := make([]byte, 4096)
			for {
				if _, err := c.Read(buf); err != nil {
					if isTimeout(err) {
						t.Fatalf("%s: connection left open after TLS garbage", addr)
					}
					break
				}
			}
			c.Close()
		}
		if err := s.try(kgo.DialTLSConfig(s.tls(false)), kgo.SASL(plain.Auth{User: "alice", Pass: alicePass}.AsMechanism())); err != nil {
			t.Fatalf("the broker stopped serving after garbage: %v", err)
		}
	})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Replacing the certificate files changes what new connections see,
// without a restart.
func secCertReload(t *testing.T, s *secBroker) {
	next, err := s.ca.Issue(pki.Leaf{Subject: pkix.Name{CommonName: "broker-renewed"}, Hosts: []string{"127.0.0.1"}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	// Write the key first under a temporary name, then rename both: a
	// reader never sees a certificate without its key.
	writeFile(t, s.keyFile+".new", string(next.KeyPEM))
	writeFile(t, s.certFile+".new", string(next.CertPEM))
	if err := os.Rename(s.keyFile+".new", s.keyFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(s.certFile+".new", s.certFile); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the renewed certificate served", func() bool {
		c, err := tls.Dial("tcp", s.ssl, s.tls(false))
		if err != nil {
			return false
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName == "broker-renewed"
	})
}
