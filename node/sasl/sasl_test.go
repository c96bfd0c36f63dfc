package sasl

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	kplain "github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"
)

// memCreds is an in-memory credential store.
type memCreds map[string]ScramCredential // "user/mechanism"

func (m memCreds) LookupScram(user, mech string) (ScramCredential, bool, error) {
	c, ok := m[user+"/"+mech]
	return c, ok, nil
}

type brokenCreds struct{}

func (brokenCreds) LookupScram(string, string) (ScramCredential, bool, error) {
	return ScramCredential{}, false, errors.New("store down")
}

func newCreds(t testing.TB, users map[string]string, mechs ...string) memCreds {
	t.Helper()
	m := memCreds{}
	for u, p := range users {
		for _, mech := range mechs {
			c, err := FromPassword(mech, p, MinIterations, crand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			m[u+"/"+mech] = c
		}
	}
	return m
}

func newTestServer(t testing.TB, creds Credentials, oauth *OAuthConfig) *Server {
	t.Helper()
	mechs := []string{Plain, ScramSHA256, ScramSHA512}
	if oauth != nil {
		mechs = append(mechs, OAuthBearer)
	}
	s, err := NewServer(Config{Mechanisms: mechs, Credentials: creds, OAuth: oauth, Rand: rand.New(rand.NewSource(1))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type sessionLike interface {
	Challenge([]byte) (bool, []byte, error)
}

// exchange runs a franz-go client session against a server exchange.
func exchange(t testing.TB, s *Server, name string, sess sessionLike, first []byte) (Exchange, error) {
	t.Helper()
	ex, err := s.Start(name)
	if err != nil {
		t.Fatal(err)
	}
	msg := first
	now := time.Unix(1_700_000_000, 0)
	for range 5 {
		out, done, err := ex.Step(msg, now)
		if err != nil {
			return ex, err
		}
		clientDone, next, cerr := sess.Challenge(out)
		if cerr != nil {
			t.Fatalf("client rejected the server's message %q: %v", out, cerr)
		}
		if done {
			if !clientDone {
				t.Fatal("server done, client not")
			}
			return ex, nil
		}
		msg = next
	}
	t.Fatal("exchange did not finish in 5 steps")
	return nil, nil
}

func TestScramWithFranzGoClient(t *testing.T) {
	creds := newCreds(t, map[string]string{"alice": "pw-ålice", "bob,=x": "secret"}, ScramSHA256, ScramSHA512)
	s := newTestServer(t, creds, nil)
	for _, mech := range []string{ScramSHA256, ScramSHA512} {
		for _, tc := range []struct {
			user, pass, zid string
			ok              bool
		}{
			{"alice", "pw-ålice", "", true},
			{"alice", "pw-ålice", "alice", true},
			{"bob,=x", "secret", "", true},
			{"alice", "wrong", "", false},
			{"nobody", "pw", "", false},
			{"alice", "pw-ålice", "bob", false},
		} {
			a := kscram.Auth{User: tc.user, Pass: tc.pass, Zid: tc.zid}
			m := a.AsSha256Mechanism()
			if mech == ScramSHA512 {
				m = a.AsSha512Mechanism()
			}
			sess, first, err := m.Authenticate(context.Background(), "host")
			if err != nil {
				t.Fatal(err)
			}
			ex, err := exchange(t, s, mech, sess, first)
			if tc.ok != (err == nil) {
				t.Fatalf("%s %+v: err %v", mech, tc, err)
			}
			if err != nil {
				var ae *AuthError
				if !errors.As(err, &ae) {
					t.Fatalf("%s %+v: error %v is not an AuthError", mech, tc, err)
				}
				if strings.Contains(err.Error(), tc.pass) {
					t.Fatalf("error %q shows the password", err)
				}
				continue
			}
			if got := ex.Principal(); got != "User:"+tc.user {
				t.Fatalf("principal %q", got)
			}
		}
	}
}

func TestScramRefusesKafkaIncompatibleMessages(t *testing.T) {
	creds := newCreds(t, map[string]string{"alice": "pw"}, ScramSHA256)
	s := newTestServer(t, creds, nil)
	for _, msg := range []string{
		"n,,n=alice,r=abc,tokenauth=true", // delegation token
		"n,,n=,r=abc",                     // empty user
		"n,,n=alice",                      // too few fields
		"p=tls-unique,,n=alice,r=abc",     // channel binding
		"x,,n=alice,r=abc",
		"n,,m=ext,n=alice,r=abc",
		"",
		strings.Repeat("n", scramMessageBytesMax+1),
	} {
		ex, _ := s.Start(ScramSHA256)
		_, done, err := ex.Step([]byte(msg), time.Now())
		if err == nil || done {
			t.Fatalf("%q accepted", msg)
		}
		if _, _, err := ex.Step([]byte("c=biws,r=abc,p=AAAA"), time.Now()); err == nil {
			t.Fatalf("%q: the exchange went on after failing", msg)
		}
	}
	// A bad client-final after a good client-first.
	for _, final := range []string{"", "c=biws", "c=biws,r=wrongnonce,p=AAAA", "garbage,,,,", "c=eSws,r=x,p=y"} {
		ex, _ := s.Start(ScramSHA256)
		if _, _, err := ex.Step([]byte("n,,n=alice,r=abc"), time.Now()); err != nil {
			t.Fatal(err)
		}
		_, done, err := ex.Step([]byte(final), time.Now())
		if err == nil || done {
			t.Fatalf("final %q accepted", final)
		}
	}
}

func TestScramStoreDownIsNotBadPassword(t *testing.T) {
	s := newTestServer(t, brokenCreds{}, nil)
	ex, _ := s.Start(ScramSHA512)
	_, _, err := ex.Step([]byte("n,,n=alice,r=abc"), time.Now())
	if err != errStoreUnavailable {
		t.Fatalf("err %v", err)
	}
	ex, _ = s.Start(Plain)
	if _, _, err := ex.Step([]byte("\x00alice\x00pw"), time.Now()); err != errStoreUnavailable {
		t.Fatalf("plain: err %v", err)
	}
}

// The server nonce comes from Config.Rand: the same seed gives the same
// server-first message (the simulator's determinism depends on it).
func TestScramNonceFromSeededRand(t *testing.T) {
	creds := newCreds(t, map[string]string{"alice": "pw"}, ScramSHA256)
	first := func(seed int64) string {
		s, err := NewServer(Config{Mechanisms: []string{ScramSHA256}, Credentials: creds, Rand: rand.New(rand.NewSource(seed))})
		if err != nil {
			t.Fatal(err)
		}
		ex, _ := s.Start(ScramSHA256)
		out, _, err := ex.Step([]byte("n,,n=alice,r=clientnonce"), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	if a, b := first(7), first(7); a != b {
		t.Fatalf("same seed, different server-first: %q %q", a, b)
	}
	if a, b := first(7), first(8); a == b {
		t.Fatalf("different seeds, same server-first %q", a)
	}
}

func TestPlain(t *testing.T) {
	creds := newCreds(t, map[string]string{"alice": "pw1", "carol": "pw3"}, ScramSHA512)
	creds256 := newCreds(t, map[string]string{"bob": "pw2"}, ScramSHA256)
	for k, v := range creds256 {
		creds[k] = v
	}
	s := newTestServer(t, creds, nil)
	for _, tc := range []struct {
		msg string
		ok  bool
	}{
		{"\x00alice\x00pw1", true},
		{"alice\x00alice\x00pw1", true},
		{"\x00bob\x00pw2", true}, // only a SHA-256 credential
		{"\x00alice\x00pw2", false},
		{"\x00nobody\x00pw1", false},
		{"bob\x00alice\x00pw1", false},
		{"\x00alice\x00", false},
		{"\x00\x00pw1", false},
		{"alice\x00pw1", false},
		{"", false},
		{"\x00alice\x00" + strings.Repeat("p", plainMessageBytesMax), false},
	} {
		ex, _ := s.Start(Plain)
		out, done, err := ex.Step([]byte(tc.msg), time.Now())
		if tc.ok != (err == nil && done) {
			t.Fatalf("%q: done %v err %v", tc.msg, done, err)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Fatalf("error %q shows the password", err)
		}
		if tc.ok && len(out) != 0 {
			t.Fatalf("PLAIN answered %q, want nothing", out)
		}
	}
	// franz-go's PLAIN client produces what the server accepts.
	sess, first, _ := kplain.Auth{User: "carol", Pass: "pw3"}.AsMechanism().Authenticate(context.Background(), "h")
	ex, err := exchange(t, s, Plain, sess, first)
	if err != nil || ex.Principal() != "User:carol" {
		t.Fatalf("franz-go PLAIN: %v %q", err, ex.Principal())
	}
}

func TestCredentialDerivation(t *testing.T) {
	salt := []byte("0123456789abcdef")
	for _, mech := range []string{ScramSHA256, ScramSHA512} {
		salted, err := SaltPassword(mech, "pencil", salt, 4096)
		if err != nil {
			t.Fatal(err)
		}
		c, err := FromSaltedPassword(mech, salted, salt, 4096)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Verify(mech, []byte("pencil")) || c.Verify(mech, []byte("pencil2")) {
			t.Fatal("Verify")
		}
		if len(c.StoredKey) != KeySize(mech) || len(c.ServerKey) != KeySize(mech) {
			t.Fatal("key sizes")
		}
		if bytes.Equal(c.StoredKey, salted) || bytes.Equal(c.ServerKey, salted) {
			t.Fatal("the salted password is stored")
		}
		for _, it := range []int{0, 4095, 16385} {
			if _, err := FromSaltedPassword(mech, salted, salt, it); err == nil {
				t.Fatalf("iterations %d accepted", it)
			}
		}
		if _, err := FromSaltedPassword(mech, salted[1:], salt, 4096); err == nil {
			t.Fatal("short salted password accepted")
		}
	}
	// RFC 7677's SCRAM-SHA-256 test vector: user "user", password
	// "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096 iterations.
	salt, _ = base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	salted, _ := SaltPassword(ScramSHA256, "pencil", salt, 4096)
	c, _ := FromSaltedPassword(ScramSHA256, salted, salt, 4096)
	ex := newScramExchange(ScramSHA256, memCreds{"user/" + ScramSHA256: c}, func() string { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0" })
	out, _, err := ex.Step([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if want := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"; string(out) != want {
		t.Fatalf("server-first %q\nwant         %q", out, want)
	}
	out, done, err := ex.Step([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="), time.Now())
	if err != nil || !done {
		t.Fatalf("client-final: %v", err)
	}
	if want := "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; string(out) != want {
		t.Fatalf("server-final %q, want %q", out, want)
	}
}

func TestPrincipalMappingRules(t *testing.T) {
	for _, tc := range []struct {
		rules, dn, want string
		err             bool
	}{
		{"", "CN=alice,OU=eng,O=Acme,C=US", "User:CN=alice,OU=eng,O=Acme,C=US", false},
		{"DEFAULT", "CN=alice", "User:CN=alice", false},
		// Kafka's documentation examples.
		{`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT`, "CN=kafka-svc,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "User:kafka-svc", false},
		{`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT`, "CN=adminUser,OU=Admin,O=Unknown", "User:CN=adminUser,OU=Admin,O=Unknown", false},
		{`RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT`,
			"CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Palo Alto,ST=CA,C=US", "User:duke@javasoft", false},
		{`RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U`, "OU=x,CN=Bob.Smith,O=y", "User:BOB.SMITH", false},
		{`RULE:^CN=([^,]*)$/$1x/`, "CN=a", "User:ax", false},
		{`RULE:^CN=(.*)$/svc\/$1/`, "CN=a", "User:svc/a", false},
		{`RULE:^CN=(.*)$/$1/`, "OU=nomatch", "", true},
	} {
		m, err := ParsePrincipalMappingRules(tc.rules)
		if err != nil {
			t.Fatalf("%q: %v", tc.rules, err)
		}
		got, err := m.Map(tc.dn)
		if tc.err != (err != nil) || got != tc.want {
			t.Fatalf("rules %q dn %q: got %q, %v; want %q", tc.rules, tc.dn, got, err, tc.want)
		}
	}
	for _, bad := range []string{"RULE:abc", "RULE:^(/x", "NOPE", "DEFAULT x", "RULE:a/b/c"} {
		if _, err := ParsePrincipalMappingRules(bad); err == nil {
			t.Fatalf("%q parsed", bad)
		}
	}
}

func TestDistinguishedNameAsJava(t *testing.T) {
	subj := pkix.Name{
		Country: []string{"US"}, Organization: []string{"Acme, Inc"}, OrganizationalUnit: []string{"eng"},
		CommonName: "alice", ExtraNames: []pkix.AttributeTypeAndValue{
			{Type: asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}, Value: "example"},
		},
	}
	raw, err := asn1.Marshal(subj.ToRDNSequence())
	if err != nil {
		t.Fatal(err)
	}
	got := DistinguishedName(&x509.Certificate{RawSubject: raw})
	if want := `DC=example,CN=alice,OU=eng,O=Acme\, Inc,C=US`; got != want {
		t.Fatalf("DN %q, want %q", got, want)
	}
}

// jwtFixture signs tokens with an ECDSA key published in a JWKS.
type jwtFixture struct {
	set    *jose.JSONWebKeySet
	signer jose.Signer
	other  jose.Signer // a key not in the set, same kid
}

func newJWTFixture(t *testing.T) *jwtFixture {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	jwk := jose.JSONWebKey{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}
	data, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jwk}})
	if err != nil {
		t.Fatal(err)
	}
	set, err := ParseKeySet(data)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(k *ecdsa.PrivateKey) jose.Signer {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", "k1").WithType("JWT"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	return &jwtFixture{set: set, signer: mk(key), other: mk(otherKey)}
}

func (f *jwtFixture) token(t *testing.T, s jose.Signer, cl jwt.Claims) string {
	t.Helper()
	tok, err := jwt.Signed(s).Claims(cl).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func oauthMsg(token string) []byte { return []byte("n,,\x01auth=Bearer " + token + "\x01\x01") }

func TestOAuthBearer(t *testing.T) {
	f := newJWTFixture(t)
	now := time.Unix(1_700_000_000, 0)
	cfg := &OAuthConfig{Keys: func() *jose.JSONWebKeySet { return f.set }, Issuer: "https://idp", Audience: "floe", ClockSkew: 30 * time.Second}
	s := newTestServer(t, memCreds{}, cfg)
	good := jwt.Claims{Subject: "alice", Issuer: "https://idp", Audience: jwt.Audience{"floe", "x"},
		Expiry: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now)}
	with := func(mod func(*jwt.Claims)) jwt.Claims { c := good; mod(&c); return c }
	unsigned := func(cl jwt.Claims) string {
		h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`))
		p, _ := json.Marshal(cl)
		return h + "." + base64.RawURLEncoding.EncodeToString(p) + "."
	}
	for _, tc := range []struct {
		name   string
		msg    []byte
		reason string // "" = accepted
	}{
		{"good", oauthMsg(f.token(t, f.signer, good)), ""},
		{"authzid", []byte("n,a=alice,\x01auth=Bearer " + f.token(t, f.signer, good) + "\x01\x01"), ""},
		{"extensions", []byte("n,,\x01auth=Bearer " + f.token(t, f.signer, good) + "\x01k=v\x01\x01"), ""},
		{"within skew", oauthMsg(f.token(t, f.signer, with(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(now.Add(-10 * time.Second)) }))), ""},
		{"expired", oauthMsg(f.token(t, f.signer, with(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(now.Add(-time.Minute)) }))), "expired"},
		{"no exp", oauthMsg(f.token(t, f.signer, with(func(c *jwt.Claims) { c.Expiry = nil }))), "no exp"},
		{"nbf", oauthMsg(f.token(t, f.signer, with(func(c *jwt.Claims) { c.NotBefore = jwt.NewNumericDate(now.Add(time.Minute)) }))), "nbf"},
		{"issuer", oauthMsg(f.token(t, f.signer, with(func(c *jwt.Claims) { c.Issuer = "evil" }))), "issuer"},
		{"audience", oauthMsg(f.token(t, f.signer, with(func(c *jwt.Claims) { c.Audience = jwt.Audience{"other"} }))), "audience"},
		{"no sub", oauthMsg(f.token(t, f.signer, with(func(c *jwt.Claims) { c.Subject = "" }))), `"sub"`},
		{"wrong key", oauthMsg(f.token(t, f.other, good)), "signature"},
		{"unsigned", oauthMsg(unsigned(good)), "signed JWT"},
		{"garbage token", oauthMsg("not.a.jwt"), "signed JWT"},
		{"authzid mismatch", []byte("n,a=bob,\x01auth=Bearer " + f.token(t, f.signer, good) + "\x01\x01"), "authorization id"},
	} {
		ex, _ := s.Start(OAuthBearer)
		out, done, err := ex.Step(tc.msg, now)
		if tc.reason == "" {
			if err != nil || !done || len(out) != 0 || ex.Principal() != "User:alice" || !ex.Expiry().Equal(good.Expiry.Time()) && tc.name == "good" {
				t.Fatalf("%s: out %q done %v err %v principal %q", tc.name, out, done, err, ex.Principal())
			}
			continue
		}
		if err != nil || done || string(out) != `{"status":"invalid_token"}` {
			t.Fatalf("%s: want the JSON status first; got %q %v %v", tc.name, out, done, err)
		}
		_, done, err = ex.Step([]byte{0x01}, now)
		if err == nil || done || !strings.Contains(err.Error(), tc.reason) {
			t.Fatalf("%s: err %v, want one saying %q", tc.name, err, tc.reason)
		}
		if strings.Contains(err.Error(), "eyJ") {
			t.Fatalf("%s: error %q shows the token", tc.name, err)
		}
	}
	for _, bad := range []string{"", "n,,", "y,,\x01auth=Bearer x\x01\x01", "n,,\x01auth=Basic x\x01\x01", "n,,\x01auth=Bearer x\x01", "n,,\x01\x01"} {
		ex, _ := s.Start(OAuthBearer)
		if _, done, err := ex.Step([]byte(bad), now); err == nil || done {
			t.Fatalf("malformed %q accepted", bad)
		}
	}
	// Unsigned tokens only with AllowUnsigned.
	dev := newTestServer(t, memCreds{}, &OAuthConfig{AllowUnsigned: true})
	ex, _ := dev.Start(OAuthBearer)
	if _, done, err := ex.Step(oauthMsg(unsigned(good)), now); err != nil || !done || ex.Principal() != "User:alice" {
		t.Fatalf("unsigned with AllowUnsigned: %v %v", done, err)
	}
	ex, _ = dev.Start(OAuthBearer)
	if _, done, _ := ex.Step(oauthMsg(unsigned(with(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(now.Add(-time.Hour)) }))), now); done {
		t.Fatal("expired unsigned token accepted")
	}
}

func TestNewServerChecks(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Mechanisms: []string{"GSSAPI"}, Credentials: memCreds{}},
		{Mechanisms: []string{Plain}},
		{Mechanisms: []string{ScramSHA256}, Credentials: memCreds{}},
		{Mechanisms: []string{OAuthBearer}},
		{Mechanisms: []string{OAuthBearer}, OAuth: &OAuthConfig{}},
		{Mechanisms: []string{Plain, Plain}, Credentials: memCreds{}},
	} {
		if _, err := NewServer(cfg); err == nil {
			t.Fatalf("%+v accepted", cfg)
		}
	}
	s := newTestServer(t, memCreds{}, nil)
	if _, err := s.Start(OAuthBearer); err != ErrUnsupportedMechanism {
		t.Fatalf("disabled mechanism: %v", err)
	}
}

func TestParseKeySet(t *testing.T) {
	for _, bad := range []string{"", "{}", `{"keys":[]}`, `{"keys":[{"kty":"oct","k":"AAAA"}]}`, "not json"} {
		if _, err := ParseKeySet([]byte(bad)); err == nil {
			t.Fatalf("%q parsed", bad)
		}
	}
}

// clientFinal computes a client-final message for withoutProof, as a
// client holding password would.
func clientFinal(t *testing.T, mech, password string, c ScramCredential, clientFirstBare, serverFirst, withoutProof string) string {
	t.Helper()
	h, _ := hashFor(mech)
	salted, err := SaltPassword(mech, password, c.Salt, c.Iterations)
	if err != nil {
		t.Fatal(err)
	}
	clientKey := hmacOf(h, salted, "Client Key")
	stored := h()
	stored.Write(clientKey)
	sig := hmacOf(h, stored.Sum(nil), clientFirstBare+","+serverFirst+","+withoutProof)
	for i := range clientKey {
		clientKey[i] ^= sig[i]
	}
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(clientKey)
}

// librdkafka (Debian's 2.0.2) sends its client nonce twice in
// client-final; Kafka accepts a nonce that ends with the server's, and so
// must Floe. A nonce lacking the server's part is refused.
func TestScramLibrdkafkaNonce(t *testing.T) {
	creds := newCreds(t, map[string]string{"alice": "pw"}, ScramSHA256)
	c := creds["alice/"+ScramSHA256]
	for _, tc := range []struct {
		nonce func(cnonce, combined string) string
		ok    bool
	}{
		{func(cn, comb string) string { return comb }, true},
		{func(cn, comb string) string { return cn + comb }, true},
		{func(cn, comb string) string { return cn }, false},
		{func(cn, comb string) string { return comb[:len(comb)-1] }, false},
	} {
		ex := newScramExchange(ScramSHA256, creds, func() string { return "SERVERNONCE" })
		first := "n=alice,r=CLIENT>-~"
		sf, _, err := ex.Step([]byte("n,,"+first), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		nonce := tc.nonce("CLIENT>-~", "CLIENT>-~SERVERNONCE")
		final := clientFinal(t, ScramSHA256, "pw", c, first, string(sf), "c=biws,r="+nonce)
		_, done, err := ex.Step([]byte(final), time.Now())
		if tc.ok != (done && err == nil) {
			t.Fatalf("nonce %q: done %v err %v", nonce, done, err)
		}
	}
}
