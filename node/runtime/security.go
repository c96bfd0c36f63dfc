package runtime

import (
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/kafka"
	"github.com/floe-broker/floe/node/sasl"
)

// Kafka's security protocols, as listener.security.protocol.map names
// them.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// Listener is one Kafka listener: a name (what clients' Metadata is keyed
// by), its security protocol and where it listens.
type Listener struct {
	Name     string
	Protocol string
	Addr     string
}

func (l Listener) usesTLS() bool { return l.Protocol == ProtocolSSL || l.Protocol == ProtocolSASLSSL }
func (l Listener) usesSASL() bool {
	return l.Protocol == ProtocolSASLPlaintext || l.Protocol == ProtocolSASLSSL
}

// Security configures TLS and authentication. The zero value is none: every
// listener must then be PLAINTEXT.
type Security struct {
	// TLS is the broker's certificate and key, and the CA bundle client
	// certificates are verified against, for SSL and SASL_SSL listeners
	// and the admin endpoint. Reloaded when the files change.
	TLS TLSFiles
	// ClientAuth is none, requested or required (mTLS).
	ClientAuth string
	// PrincipalRules is Kafka's ssl.principal.mapping.rules ("" is
	// DEFAULT): how an SSL listener's client certificate becomes a
	// principal.
	PrincipalRules string
	// SASLMechanisms are the mechanisms of SASL listeners.
	SASLMechanisms []string
	// ReauthMax is connections.max.reauth.ms (0: none).
	ReauthMax time.Duration
	// OAuth validates OAUTHBEARER tokens.
	OAuth OAuthOptions
	// AuthFailureDelay and AuthFailureDelayMax bound the delay before a
	// failed authentication's answer (zero: 100 ms and 5 s).
	AuthFailureDelay, AuthFailureDelayMax time.Duration
	// PeerTLS, when set, runs the peer (Raft) transport over mutual TLS:
	// each broker presents CertFile and requires a peer certificate signed
	// by CAFile, both ways.
	PeerTLS *TLSFiles
	// AdminTLS serves the admin endpoint over HTTPS with TLS's certificate.
	AdminTLS bool
	// ReloadEvery is how often certificate and JWKS files are checked for
	// change (0: one second).
	ReloadEvery time.Duration
	// NonceRand is the source of SCRAM server nonces (nil: crypto/rand).
	// Nonces must be unpredictable in production; a test may pass a
	// seeded source to replay an exchange (the simulator builds its own
	// sasl.Server from the node's seeded randomness, sim/auth.go).
	NonceRand io.Reader
}

// OAuthOptions configure OAUTHBEARER.
type OAuthOptions struct {
	JWKSFile       string
	Issuer         string
	Audience       string
	ClockSkew      time.Duration
	PrincipalClaim string
	// AllowUnsigned accepts unsigned tokens: development only.
	AllowUnsigned bool
}

// checkListeners validates names, protocols and addresses.
func checkListeners(ls []Listener, sec Security) error {
	if len(ls) == 0 {
		return errors.New("no Kafka listener")
	}
	names, addrs := map[string]bool{}, map[string]bool{}
	for _, l := range ls {
		switch l.Protocol {
		case ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL:
		default:
			return fmt.Errorf("listener %s: unknown security protocol %q (want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", l.Name, l.Protocol)
		}
		if l.Name == "" || names[l.Name] {
			return fmt.Errorf("listener name %q is empty or used twice", l.Name)
		}
		if addrs[l.Addr] {
			return fmt.Errorf("listener %s: address %s is used twice", l.Name, l.Addr)
		}
		names[l.Name], addrs[l.Addr] = true, true
		if l.usesTLS() && sec.TLS.CertFile == "" {
			return fmt.Errorf("listener %s (%s) needs a TLS certificate and key", l.Name, l.Protocol)
		}
		if l.usesSASL() && len(sec.SASLMechanisms) == 0 {
			return fmt.Errorf("listener %s (%s) needs SASL mechanisms", l.Name, l.Protocol)
		}
	}
	return nil
}

// security is what the broker built from Security.
type security struct {
	tls      *TLSReloader // nil without a certificate
	peerTLS  *TLSReloader // nil without peer TLS
	sasl     *sasl.Server // nil without SASL listeners
	mapper   *sasl.PrincipalMapper
	auth     tls.ClientAuthType
	failures *kafka.FailureDelay
	connIDs  *atomic.Uint64
}

func (b *Broker) buildSecurity(ls []Listener, sec Security, log *slog.Logger) (*security, error) {
	if err := checkListeners(ls, sec); err != nil {
		return nil, err
	}
	s := &security{failures: kafka.NewFailureDelay(sec.AuthFailureDelay, sec.AuthFailureDelayMax), connIDs: new(atomic.Uint64)}
	var err error
	if s.auth, err = ParseClientAuth(sec.ClientAuth); err != nil {
		return nil, err
	}
	if s.mapper, err = sasl.ParsePrincipalMappingRules(sec.PrincipalRules); err != nil {
		return nil, err
	}
	if sec.TLS.CertFile != "" || sec.TLS.KeyFile != "" {
		if s.tls, err = NewTLSReloader(sec.TLS, log, sec.ReloadEvery); err != nil {
			return nil, err
		}
	}
	if sec.AdminTLS && s.tls == nil {
		return nil, errors.New("the admin endpoint over TLS needs a TLS certificate and key")
	}
	if sec.PeerTLS != nil {
		if sec.PeerTLS.CertFile == "" || sec.PeerTLS.CAFile == "" {
			return nil, errors.New("peer TLS needs a certificate, a key and a CA file")
		}
		if s.peerTLS, err = NewTLSReloader(*sec.PeerTLS, log, sec.ReloadEvery); err != nil {
			return nil, err
		}
	}
	if slices.ContainsFunc(ls, Listener.usesSASL) {
		if s.sasl, err = b.saslServer(sec, log); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (b *Broker) saslServer(sec Security, log *slog.Logger) (*sasl.Server, error) {
	nonces := sec.NonceRand
	if nonces == nil {
		nonces = rand.Reader
	}
	cfg := sasl.Config{Mechanisms: sec.SASLMechanisms, Credentials: reactorCredentials{b}, Rand: nonces}
	if slices.Contains(sec.SASLMechanisms, sasl.OAuthBearer) {
		o := sec.OAuth
		oc := &sasl.OAuthConfig{Issuer: o.Issuer, Audience: o.Audience, ClockSkew: o.ClockSkew,
			PrincipalClaim: o.PrincipalClaim, AllowUnsigned: o.AllowUnsigned}
		if o.JWKSFile != "" {
			keys, err := newKeySetFile(o.JWKSFile, log, sec.ReloadEvery)
			if err != nil {
				return nil, fmt.Errorf("OAUTHBEARER JWKS: %w", err)
			}
			oc.Keys = keys.Keys
		}
		cfg.OAuth = oc
	}
	return sasl.NewServer(cfg)
}

// kafkaConfig is the protocol server configuration of listener l.
func (s *security) kafkaConfig(l Listener, base kafka.Config, reauthMax time.Duration) (kafka.Config, error) {
	cfg := base
	cfg.Addr, cfg.Listener, cfg.ConnIDs = l.Addr, l.Name, s.connIDs
	cfg.AuthFailures, cfg.ReauthMax = s.failures, reauthMax
	cfg.TLSPrincipal = s.mapper.MapCertificate
	if l.usesTLS() {
		tc, err := s.tls.ServerConfig(s.auth)
		if err != nil {
			return cfg, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		cfg.TLS = tc
	}
	if l.usesSASL() {
		cfg.SASL = s.sasl
	}
	return cfg, nil
}

// reactorCredentials looks SCRAM credentials up in the reactor's applied
// metadata, from a connection's goroutine: one round trip through the
// event loop per lookup (an authentication or two per connection).
type reactorCredentials struct{ b *Broker }

// credentialLookupTimeout bounds the wait for the reactor.
const credentialLookupTimeout = 5 * time.Second

func (rc reactorCredentials) LookupScram(user, mechanism string) (sasl.ScramCredential, bool, error) {
	m := controller.MechanismScramSHA256
	if mechanism == sasl.ScramSHA512 {
		m = controller.MechanismScramSHA512
	}
	type found struct {
		cred sasl.ScramCredential
		ok   bool
	}
	ch := make(chan found, 1) // the call may time out before fn runs: never block it
	answered := rc.b.loop.call(func() {
		c, ok := rc.b.reactor.ScramCredential(user, m)
		ch <- found{sasl.ScramCredential{Salt: clone(c.Salt), Iterations: int(c.Iterations),
			StoredKey: clone(c.StoredKey), ServerKey: clone(c.ServerKey)}, ok}
	}, credentialLookupTimeout)
	if !answered {
		return sasl.ScramCredential{}, false, errors.New("the broker's event loop did not answer")
	}
	f := <-ch
	return f.cred, f.ok, nil
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// peerServerName is the name a peer's certificate must carry: the host of
// its address.
func peerServerName(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
