package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"
)

// ScramCredential is what is stored for one user and one SCRAM mechanism
// (RFC 5802 section 3): the salt and iteration count the client needs to
// derive its keys, StoredKey = H(HMAC(SaltedPassword, "Client Key")) to
// check the client's proof, and ServerKey = HMAC(SaltedPassword, "Server
// Key") to prove the server knows it. Neither key lets anyone log in: the
// client proof needs ClientKey, which only the password (or the salted
// password, which is never stored) yields.
type ScramCredential struct {
	Salt       []byte
	Iterations int
	StoredKey  []byte
	ServerKey  []byte
}

// Iteration bounds, as Kafka's (KIP-554): fewer than 4096 is refused, and
// more than 16384 too (each authentication costs the client that many
// HMACs, and PLAIN costs the broker as much).
const (
	MinIterations     = 4096
	MaxIterations     = 16384
	DefaultIterations = 8192
	// SaltBytes is the salt length Floe makes (kadm uses 24 too).
	SaltBytes = 24
)

// hashFor returns the hash of a SCRAM mechanism.
func hashFor(mechanism string) (func() hash.Hash, error) {
	switch mechanism {
	case ScramSHA256:
		return sha256.New, nil
	case ScramSHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("sasl: %q is not a SCRAM mechanism", mechanism)
}

// KeySize is the length of StoredKey and ServerKey for mechanism, 0 if it
// is not a SCRAM mechanism.
func KeySize(mechanism string) int {
	h, err := hashFor(mechanism)
	if err != nil {
		return 0
	}
	return h().Size()
}

// CheckIterations enforces MinIterations..MaxIterations.
func CheckIterations(n int) error {
	if n < MinIterations || n > MaxIterations {
		return fmt.Errorf("iterations %d outside %d-%d", n, MinIterations, MaxIterations)
	}
	return nil
}

// FromSaltedPassword derives the stored credential from a salted password
// (what AlterUserScramCredentials carries; the client ran PBKDF2). The
// salted password itself is not kept.
func FromSaltedPassword(mechanism string, salted, salt []byte, iterations int) (ScramCredential, error) {
	h, err := hashFor(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	if len(salted) != h().Size() {
		return ScramCredential{}, fmt.Errorf("salted password is %d bytes, want %d for %s", len(salted), h().Size(), mechanism)
	}
	if len(salt) == 0 {
		return ScramCredential{}, errors.New("empty salt")
	}
	if err := CheckIterations(iterations); err != nil {
		return ScramCredential{}, err
	}
	clientKey := hmacOf(h, salted, "Client Key")
	stored := h()
	stored.Write(clientKey)
	return ScramCredential{
		Salt: append([]byte(nil), salt...), Iterations: iterations,
		StoredKey: stored.Sum(nil), ServerKey: hmacOf(h, salted, "Server Key"),
	}, nil
}

// FromPassword derives the stored credential from a password with a fresh
// salt read from rand. The password is hashed as its raw UTF-8 bytes, as
// Kafka and its clients do (no SASLprep).
func FromPassword(mechanism, password string, iterations int, rand io.Reader) (ScramCredential, error) {
	salt := make([]byte, SaltBytes)
	if _, err := io.ReadFull(rand, salt); err != nil {
		return ScramCredential{}, fmt.Errorf("salt: %w", err)
	}
	salted, err := SaltPassword(mechanism, password, salt, iterations)
	if err != nil {
		return ScramCredential{}, err
	}
	return FromSaltedPassword(mechanism, salted, salt, iterations)
}

// SaltPassword runs PBKDF2 (Hi in RFC 5802) over the raw password bytes.
func SaltPassword(mechanism, password string, salt []byte, iterations int) ([]byte, error) {
	h, err := hashFor(mechanism)
	if err != nil {
		return nil, err
	}
	if err := CheckIterations(iterations); err != nil {
		return nil, err
	}
	return pbkdf2.Key(h, password, salt, iterations, h().Size())
}

// Verify reports whether password matches the credential of mechanism: it
// salts the password (PBKDF2: milliseconds of CPU, so call it off any
// latency-critical thread) and compares StoredKey in constant time.
func (c ScramCredential) Verify(mechanism string, password []byte) bool {
	h, err := hashFor(mechanism)
	if err != nil || CheckIterations(c.Iterations) != nil {
		return false
	}
	salted, err := pbkdf2.Key(h, string(password), c.Salt, c.Iterations, h().Size())
	if err != nil {
		return false
	}
	stored := h()
	stored.Write(hmacOf(h, salted, "Client Key"))
	return constantTimeEqual(stored.Sum(nil), c.StoredKey)
}

func hmacOf(h func() hash.Hash, key []byte, msg string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// scramExchange is SCRAM-SHA-256 or -512 (RFC 5802) as Kafka's
// ScramSaslServer runs it: client-first, server-first, client-final,
// server-final. Kafka's rules, where they are laxer or stricter than the
// RFC, are kept, because clients rely on them:
//   - The client-final nonce must END WITH the server's nonce (client
//     nonce + server nonce), not equal it: librdkafka (Debian's 2.0.2
//     among others) sends its client nonce twice, and Kafka accepts that.
//     The server nonce, the part that defeats replays, is still checked.
//   - An authorization id other than the user is refused; delegation
//     tokens (tokenauth=true) are not supported; other extensions are
//     ignored; channel binding ("p=") is refused.
//   - An unknown user fails at the first message, as in Kafka.
//
// (github.com/xdg-go/scram's server checks the nonce for equality, so it
// cannot serve librdkafka; hence this implementation.)
type scramExchange struct {
	mechanism string
	h         func() hash.Hash
	creds     Credentials
	nonce     func() string
	step      int

	cred          ScramCredential
	gs2Header     string // "n,," or "y,," or with an authzid
	clientFirst   string // client-first-message-bare
	serverFirst   string
	combinedNonce string
	user          string
	principal     string
}

// scramMessageBytesMax bounds a SCRAM message; real ones are a few hundred
// bytes.
const scramMessageBytesMax = 4096

// nonceBytes is the server nonce's length before base64.
const nonceBytes = 18

// randomNonce returns a nonce generator reading from rand.
func randomNonce(rand io.Reader) func() string {
	return func() string {
		b := make([]byte, nonceBytes)
		if _, err := io.ReadFull(rand, b); err != nil {
			panic(fmt.Sprintf("sasl: nonce source failed: %v", err)) // crypto/rand does not fail
		}
		return base64.RawStdEncoding.EncodeToString(b)
	}
}

func newScramExchange(mechanism string, creds Credentials, nonce func() string) *scramExchange {
	h, _ := hashFor(mechanism)
	return &scramExchange{mechanism: mechanism, h: h, creds: creds, nonce: nonce}
}

func (e *scramExchange) Mechanism() string { return e.mechanism }
func (e *scramExchange) Principal() string { return e.principal }
func (e *scramExchange) Expiry() time.Time { return time.Time{} }

func (e *scramExchange) Step(msg []byte, _ time.Time) ([]byte, bool, error) {
	e.step++
	var (
		out  string
		done bool
		err  error
	)
	switch {
	case e.step > 2:
		return nil, false, ErrExchangeOver
	case len(msg) > scramMessageBytesMax:
		err = e.malformed("message too long")
	case e.step == 1:
		out, err = e.first(string(msg))
	default:
		out, err = e.final(string(msg))
		done = err == nil
	}
	if err != nil {
		e.step = 3
		return nil, false, err
	}
	return []byte(out), done, nil
}

func (e *scramExchange) malformed(why string) error {
	return authFailed("authentication failed: malformed %s message: %s", e.mechanism, why)
}

// first handles client-first: gs2-header client-first-message-bare, where
// the header is "n,," / "y,," (no channel binding) with an optional
// "a=authzid" between the commas, and the bare part "n=user,r=nonce" with
// optional extensions.
func (e *scramExchange) first(msg string) (string, error) {
	flag, rest, ok1 := strings.Cut(msg, ",")
	authz, bare, ok2 := strings.Cut(rest, ",")
	if !ok1 || !ok2 || (flag != "n" && flag != "y") {
		return "", e.malformed("bad GS2 header (channel binding is not supported)")
	}
	var authzid string
	if authz != "" {
		z, ok := strings.CutPrefix(authz, "a=")
		if !ok {
			return "", e.malformed("bad authorization id")
		}
		if authzid, ok = decodeSaslName(z); !ok {
			return "", e.malformed("bad authorization id encoding")
		}
	}
	fields := strings.Split(bare, ",")
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "n=") || !strings.HasPrefix(fields[1], "r=") {
		return "", e.malformed("want n=user,r=nonce")
	}
	user, ok := decodeSaslName(fields[0][2:])
	cnonce := fields[1][2:]
	switch {
	case !ok:
		return "", e.malformed("bad user name encoding")
	case user == "":
		return "", authFailed("authentication failed: empty user name")
	case !printableNonce(cnonce):
		return "", e.malformed("bad client nonce")
	}
	for _, f := range fields[2:] {
		if k, v, _ := strings.Cut(f, "="); k == "tokenauth" && strings.EqualFold(v, "true") {
			return "", authFailed("authentication failed: delegation tokens are not supported")
		}
	}
	if authzid != "" && authzid != user {
		return "", authFailed("authentication failed: the authorization id must be empty or the user name")
	}
	cred, found, err := e.creds.LookupScram(user, e.mechanism)
	switch {
	case err != nil:
		return "", errStoreUnavailable
	case !found || CheckIterations(cred.Iterations) != nil || len(cred.StoredKey) != e.h().Size():
		return "", errBadCredentials
	}
	e.cred, e.user = cred, user
	e.gs2Header, e.clientFirst = flag+","+authz+",", bare
	e.combinedNonce = cnonce + e.nonce()
	e.serverFirst = fmt.Sprintf("r=%s,s=%s,i=%d", e.combinedNonce, base64.StdEncoding.EncodeToString(cred.Salt), cred.Iterations)
	return e.serverFirst, nil
}

// final handles client-final: "c=<b64 gs2-header>,r=<nonce>[,ext],p=<b64
// proof>", and answers "v=<b64 server signature>".
func (e *scramExchange) final(msg string) (string, error) {
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return "", e.malformed("no proof")
	}
	withoutProof, proofB64 := msg[:i], msg[i+3:]
	fields := strings.Split(withoutProof, ",")
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "c=") || !strings.HasPrefix(fields[1], "r=") {
		return "", e.malformed("want c=...,r=...,p=...")
	}
	cbind, err := base64.StdEncoding.DecodeString(fields[0][2:])
	if err != nil || string(cbind) != e.gs2Header {
		return "", e.malformed("channel binding does not match the GS2 header")
	}
	if !strings.HasSuffix(fields[1][2:], e.combinedNonce) {
		return "", e.malformed("nonce does not match")
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil || len(proof) != e.h().Size() {
		return "", e.malformed("bad proof")
	}
	authMessage := e.clientFirst + "," + e.serverFirst + "," + withoutProof
	clientSig := hmacOf(e.h, e.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for j := range proof {
		clientKey[j] = proof[j] ^ clientSig[j]
	}
	stored := e.h()
	stored.Write(clientKey)
	if !constantTimeEqual(stored.Sum(nil), e.cred.StoredKey) {
		return "", errBadCredentials
	}
	e.principal = UserPrincipal(e.user)
	return "v=" + base64.StdEncoding.EncodeToString(hmacOf(e.h, e.cred.ServerKey, authMessage)), nil
}

// decodeSaslName undoes RFC 5802's escaping of ',' (=2C) and '=' (=3D);
// any other '=' is invalid.
func decodeSaslName(s string) (string, bool) {
	if !strings.Contains(s, "=") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// printableNonce: RFC 5802's printable characters, without ','.
func printableNonce(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}
