package sasl

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Mechanism names, as Kafka spells them.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
	OAuthBearer = "OAUTHBEARER"
)

// Anonymous is the principal of a connection that did not authenticate.
const Anonymous = "User:ANONYMOUS"

// UserPrincipal is the principal of an authenticated user name.
func UserPrincipal(name string) string { return "User:" + name }

// Credentials is where SCRAM credentials are looked up (the controller's
// replicated metadata, in a broker).
type Credentials interface {
	// LookupScram returns user's credential for mechanism (ScramSHA256 or
	// ScramSHA512). ok is false when there is none; err is set when the
	// store could not be read at all (then the attempt fails without
	// blaming the client's password).
	LookupScram(user, mechanism string) (cred ScramCredential, ok bool, err error)
}

// Config configures a Server.
type Config struct {
	// Mechanisms are the enabled mechanisms, in the order the server lists
	// them to clients.
	Mechanisms []string
	// Credentials backs PLAIN and SCRAM. Required when either is enabled.
	Credentials Credentials
	// OAuth validates OAUTHBEARER tokens. Required when it is enabled.
	OAuth *OAuthConfig
	// Rand is the source of SCRAM server nonces: crypto/rand.Reader in
	// production, a seeded source in the simulator. It must be safe for
	// concurrent use if exchanges run concurrently.
	Rand io.Reader
}

// Server starts exchanges for the enabled mechanisms. It is immutable and
// safe for concurrent use.
type Server struct {
	cfg Config
}

// Errors a caller tells apart.
var (
	// ErrUnsupportedMechanism: Start was asked for a mechanism that is not
	// enabled (Kafka's UNSUPPORTED_SASL_MECHANISM).
	ErrUnsupportedMechanism = errors.New("unsupported SASL mechanism")
	// ErrExchangeOver: Step was called after the exchange ended.
	ErrExchangeOver = errors.New("SASL exchange already finished")
)

// NewServer checks cfg.
func NewServer(cfg Config) (*Server, error) {
	if len(cfg.Mechanisms) == 0 {
		return nil, errors.New("sasl: no mechanism enabled")
	}
	seen := map[string]bool{}
	for _, m := range cfg.Mechanisms {
		if seen[m] {
			return nil, fmt.Errorf("sasl: mechanism %s listed twice", m)
		}
		seen[m] = true
		switch m {
		case Plain, ScramSHA256, ScramSHA512:
			if cfg.Credentials == nil {
				return nil, fmt.Errorf("sasl: %s needs a credential store", m)
			}
		case OAuthBearer:
			if cfg.OAuth == nil {
				return nil, fmt.Errorf("sasl: %s needs an OAuth configuration", m)
			}
			if err := cfg.OAuth.check(); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("sasl: unknown mechanism %q (want %s)", m, strings.Join(AllMechanisms(), ", "))
		}
	}
	if cfg.Rand == nil && (seen[ScramSHA256] || seen[ScramSHA512]) {
		return nil, errors.New("sasl: SCRAM needs a nonce source (Config.Rand)")
	}
	return &Server{cfg: cfg}, nil
}

// AllMechanisms lists every mechanism this package implements.
func AllMechanisms() []string { return []string{Plain, ScramSHA256, ScramSHA512, OAuthBearer} }

// Mechanisms returns the enabled mechanisms.
func (s *Server) Mechanisms() []string { return slices.Clone(s.cfg.Mechanisms) }

// Enabled reports whether mechanism is enabled.
func (s *Server) Enabled(mechanism string) bool { return slices.Contains(s.cfg.Mechanisms, mechanism) }

// Start begins an exchange of mechanism, or returns ErrUnsupportedMechanism.
func (s *Server) Start(mechanism string) (Exchange, error) {
	if !s.Enabled(mechanism) {
		return nil, ErrUnsupportedMechanism
	}
	switch mechanism {
	case Plain:
		return &plainExchange{creds: s.cfg.Credentials}, nil
	case ScramSHA256, ScramSHA512:
		return newScramExchange(mechanism, s.cfg.Credentials, randomNonce(s.cfg.Rand)), nil
	default:
		return &oauthExchange{cfg: s.cfg.OAuth}, nil
	}
}

// Exchange is one authentication attempt of one mechanism.
//
// Contract: Step is called with each client message in turn, from one
// goroutine at a time. It returns the server's answer (possibly empty,
// always to be sent, even with done) and done once the client is
// authenticated; Principal and Expiry are then set. An error ends the
// exchange unsuccessfully: the caller answers SASL_AUTHENTICATION_FAILED
// with err's text (safe: no secret in it) and closes the connection. Some
// mechanisms answer a failure with a last message first (OAUTHBEARER's
// JSON status): Step then returns it with done false and no error, and
// fails the next call.
type Exchange interface {
	Step(msg []byte, now time.Time) (out []byte, done bool, err error)
	// Mechanism is the exchange's mechanism name.
	Mechanism() string
	// Principal is the authenticated principal, "User:<name>".
	Principal() string
	// Expiry is when the credential stops being valid (an OAuth token's
	// exp); zero when it does not expire.
	Expiry() time.Time
}

// AuthError is an authentication failure whose text is safe to send to the
// client and to log.
type AuthError struct{ Reason string }

func (e *AuthError) Error() string { return e.Reason }

func authFailed(format string, args ...any) error {
	return &AuthError{Reason: fmt.Sprintf(format, args...)}
}

// errBadCredentials is the one answer to a wrong user name or password:
// which of the two was wrong is not said.
var errBadCredentials = authFailed("authentication failed: invalid credentials")

// errStoreUnavailable: the credential store could not be read.
var errStoreUnavailable = authFailed("authentication failed: the credential store is not available, try again")
