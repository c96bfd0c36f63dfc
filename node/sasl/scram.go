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

	"github.com/xdg-go/scram"
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

// scramExchange is SCRAM-SHA-256 or -512: client-first, server-first,
// client-final, server-final, run by xdg-go/scram's server conversation.
// Around it, as Kafka's ScramSaslServer does: an authorization id other
// than the user is refused, delegation tokens (tokenauth=true) are not
// supported, an unknown user fails at the first message, and the library's
// RFC "e=" answers become SASL_AUTHENTICATION_FAILED errors.
type scramExchange struct {
	mechanism string
	creds     Credentials
	conv      *scram.ServerConversation
	lookupErr error // set when the store failed during the first step
	principal string
	step      int
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
	e := &scramExchange{mechanism: mechanism, creds: creds}
	gen := scram.SHA256
	if mechanism == ScramSHA512 {
		gen = scram.SHA512
	}
	lookup := func(user string) (scram.StoredCredentials, error) {
		cred, ok, err := creds.LookupScram(user, mechanism)
		if err != nil {
			e.lookupErr = err
			return scram.StoredCredentials{}, err
		}
		if !ok || CheckIterations(cred.Iterations) != nil {
			return scram.StoredCredentials{}, errors.New("unknown user")
		}
		return scram.StoredCredentials{
			KeyFactors: scram.KeyFactors{Salt: string(cred.Salt), Iters: cred.Iterations},
			StoredKey:  cred.StoredKey, ServerKey: cred.ServerKey,
		}, nil
	}
	srv, err := gen.NewServer(lookup)
	if err != nil {
		panic(fmt.Sprintf("sasl: xdg-go/scram NewServer: %v", err)) // it never fails; a bug if it does
	}
	e.conv = srv.WithNonceGenerator(nonce).NewConversation()
	return e
}

func (e *scramExchange) Mechanism() string { return e.mechanism }
func (e *scramExchange) Principal() string { return e.principal }
func (e *scramExchange) Expiry() time.Time { return time.Time{} }

func (e *scramExchange) Step(msg []byte, _ time.Time) ([]byte, bool, error) {
	e.step++
	switch {
	case e.step > 2:
		return nil, false, ErrExchangeOver
	case len(msg) > scramMessageBytesMax:
		e.step = 3
		return nil, false, authFailed("authentication failed: malformed %s message (too long)", e.mechanism)
	case e.step == 1:
		return e.first(string(msg))
	default:
		return e.final(string(msg))
	}
}

func (e *scramExchange) first(msg string) ([]byte, bool, error) {
	if err := checkClientFirst(msg); err != nil {
		e.step = 3
		return nil, false, err
	}
	out, err := e.conv.Step(msg)
	switch {
	case e.lookupErr != nil:
		e.step = 3
		return nil, false, errStoreUnavailable
	case err != nil && strings.HasPrefix(out, "e=unknown-user"):
		e.step = 3
		return nil, false, errBadCredentials
	case err != nil:
		e.step = 3
		return nil, false, authFailed("authentication failed: malformed %s client-first message", e.mechanism)
	}
	if z := e.conv.AuthzID(); z != "" && z != e.conv.Username() {
		e.step = 3
		return nil, false, authFailed("authentication failed: the authorization id must be empty or the user name")
	}
	return []byte(out), false, nil
}

func (e *scramExchange) final(msg string) ([]byte, bool, error) {
	out, err := e.conv.Step(msg)
	if err != nil || !e.conv.Valid() {
		if strings.HasPrefix(out, "e=invalid-proof") {
			return nil, false, errBadCredentials
		}
		return nil, false, authFailed("authentication failed: malformed or mismatched %s client-final message", e.mechanism)
	}
	e.principal = UserPrincipal(e.conv.Username())
	return []byte(out), true, nil
}

// checkClientFirst refuses what xdg-go/scram would accept but Kafka does
// not: delegation tokens (the tokenauth extension), and empty user names.
func checkClientFirst(msg string) error {
	fields := strings.Split(msg, ",")
	if len(fields) < 4 {
		return authFailed("authentication failed: malformed SCRAM client-first message")
	}
	for _, f := range fields[4:] {
		if k, v, _ := strings.Cut(f, "="); k == "tokenauth" && strings.EqualFold(v, "true") {
			return authFailed("authentication failed: delegation tokens are not supported")
		}
	}
	if fields[2] == "n=" {
		return authFailed("authentication failed: empty user name")
	}
	return nil
}
