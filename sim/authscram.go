package sim

// The client side of SCRAM-SHA-256 (RFC 5802, RFC 7677), written for the
// simulator from the RFC and independent of node/sasl, as batch.go is of
// node/records: a bug shared by both sides would otherwise pass. It also
// derives the credentials the simulator bootstraps and sends in
// AlterUserScramCredentials (KIP-554: the client sends the salted
// password, the broker derives the keys).

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// scramIterations is what the simulator's users are salted with: the
// least the broker accepts.
const scramIterations = 4096

// scramMechanism is the mechanism the simulated clients use.
const scramMechanism = "SCRAM-SHA-256"

// scramMechanismID is its KIP-554 number.
const scramMechanismID int8 = 1

// saltCache remembers salted passwords: PBKDF2 is the slow step, and a
// client (like librdkafka) does it once per password and salt.
type saltCache map[string][]byte

func (c saltCache) salted(password string, salt []byte, iterations int) ([]byte, error) {
	key := fmt.Sprintf("%s\x00%x\x00%d", password, salt, iterations)
	if k, ok := c[key]; ok {
		return k, nil
	}
	k, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		return nil, err
	}
	c[key] = k
	return k, nil
}

func scramHMAC(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// scramKeys are the stored key and server key of a salted password, what
// a server keeps (RFC 5802, section 3).
func scramKeys(salted []byte) (stored, server []byte) {
	ck := scramHMAC(salted, "Client Key")
	h := sha256.Sum256(ck)
	return h[:], scramHMAC(salted, "Server Key")
}

// scramClient is one exchange: first, then final with the server's first
// message, then verify with the server's final message.
type scramClient struct {
	user, password string
	cache          saltCache
	nonce          string // the client's nonce
	firstBare      string
	authMessage    string
	serverKey      []byte
}

var errScram = errors.New("scram")

// first is the client-first message: no channel binding, no authzid.
func (c *scramClient) first() []byte {
	c.firstBare = "n=" + strings.NewReplacer("=", "=3D", ",", "=2C").Replace(c.user) + ",r=" + c.nonce
	return []byte("n,," + c.firstBare)
}

// final answers the server-first message "r=<nonce>,s=<salt>,i=<n>".
func (c *scramClient) final(serverFirst []byte) ([]byte, error) {
	sf := string(serverFirst)
	attrs := map[byte]string{}
	for _, f := range strings.Split(sf, ",") {
		if len(f) < 2 || f[1] != '=' {
			return nil, fmt.Errorf("%w: server-first %q malformed", errScram, sf)
		}
		attrs[f[0]] = f[2:]
	}
	nonce, salt64, iters := attrs['r'], attrs['s'], attrs['i']
	if !strings.HasPrefix(nonce, c.nonce) || len(nonce) == len(c.nonce) {
		return nil, fmt.Errorf("%w: server nonce %q does not extend the client's", errScram, nonce)
	}
	salt, err := base64.StdEncoding.DecodeString(salt64)
	if err != nil {
		return nil, fmt.Errorf("%w: salt: %v", errScram, err)
	}
	n, err := strconv.Atoi(iters)
	if err != nil || n < scramIterations {
		return nil, fmt.Errorf("%w: iteration count %q", errScram, iters)
	}
	salted, err := c.cache.salted(c.password, salt, n)
	if err != nil {
		return nil, err
	}
	withoutProof := "c=" + base64.StdEncoding.EncodeToString([]byte("n,,")) + ",r=" + nonce
	c.authMessage = c.firstBare + "," + sf + "," + withoutProof
	clientKey := scramHMAC(salted, "Client Key")
	stored, server := scramKeys(salted)
	c.serverKey = server
	sig := scramHMAC(stored, c.authMessage)
	proof := make([]byte, len(clientKey))
	for i := range proof {
		proof[i] = clientKey[i] ^ sig[i]
	}
	return []byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)), nil
}

// verify checks the server-final message "v=<signature>": the server knew
// the credential too.
func (c *scramClient) verify(serverFinal []byte) error {
	sf := string(serverFinal)
	if e, ok := strings.CutPrefix(sf, "e="); ok {
		return fmt.Errorf("%w: server error %q", errScram, e)
	}
	v, ok := strings.CutPrefix(sf, "v=")
	if !ok {
		return fmt.Errorf("%w: server-final %q malformed", errScram, sf)
	}
	got, err := base64.StdEncoding.DecodeString(v)
	if err != nil || !hmac.Equal(got, scramHMAC(c.serverKey, c.authMessage)) {
		return fmt.Errorf("%w: server signature does not verify", errScram)
	}
	return nil
}
