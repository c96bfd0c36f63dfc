package sasl

import (
	"bytes"
	"crypto/subtle"
	"time"
)

// plainExchange is PLAIN (RFC 4616): one message, authzid NUL user NUL
// password. The password is checked against the user's SCRAM credential
// (there is one credential store): PBKDF2 with the stored salt and
// iterations, then StoredKey compared in constant time. An unknown user
// costs the same PBKDF2, so the answer's timing does not say whether the
// user exists.
type plainExchange struct {
	creds     Credentials
	principal string
	done      bool
}

// plainMessageBytesMax bounds a PLAIN message: RFC 4616 allows 255 bytes
// per field.
const plainMessageBytesMax = 3 * 256

func (e *plainExchange) Mechanism() string { return Plain }
func (e *plainExchange) Principal() string { return e.principal }
func (e *plainExchange) Expiry() time.Time { return time.Time{} }

func (e *plainExchange) Step(msg []byte, _ time.Time) ([]byte, bool, error) {
	if e.done {
		return nil, false, ErrExchangeOver
	}
	e.done = true
	if len(msg) > plainMessageBytesMax {
		return nil, false, authFailed("authentication failed: malformed PLAIN message (too long)")
	}
	parts := bytes.SplitN(msg, []byte{0}, 3)
	if len(parts) != 3 {
		return nil, false, authFailed("authentication failed: malformed PLAIN message (want authzid NUL user NUL password)")
	}
	authzid, user, pass := string(parts[0]), string(parts[1]), parts[2]
	if user == "" || len(pass) == 0 {
		return nil, false, authFailed("authentication failed: malformed PLAIN message (empty user or password)")
	}
	if authzid != "" && authzid != user {
		return nil, false, authFailed("authentication failed: the authorization id must be empty or the user name")
	}
	cred, ok, err := lookupAny(e.creds, user)
	if err != nil {
		return nil, false, errStoreUnavailable
	}
	mech := ScramSHA512
	if ok {
		mech = cred.mechanism
	} else {
		cred.ScramCredential = decoyCredential
	}
	match := cred.Verify(mech, pass)
	if !ok || !match {
		return nil, false, errBadCredentials
	}
	e.principal = UserPrincipal(user)
	return []byte{}, true, nil
}

// namedCredential is a credential with its mechanism.
type namedCredential struct {
	ScramCredential
	mechanism string
}

// lookupAny finds a user's credential, SCRAM-SHA-512 first.
func lookupAny(c Credentials, user string) (namedCredential, bool, error) {
	for _, m := range []string{ScramSHA512, ScramSHA256} {
		cred, ok, err := c.LookupScram(user, m)
		if err != nil {
			return namedCredential{}, false, err
		}
		if ok {
			return namedCredential{cred, m}, true, nil
		}
	}
	return namedCredential{}, false, nil
}

// decoyCredential is checked against when the user does not exist, so an
// unknown user costs the same as a wrong password.
var decoyCredential = ScramCredential{
	Salt: bytes.Repeat([]byte{0x5a}, 24), Iterations: MinIterations,
	StoredKey: make([]byte, 64), ServerKey: make([]byte, 64),
}

// constantTimeEqual compares two secrets in time that depends only on
// their lengths.
func constantTimeEqual(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }
