package sim

// Authentication and ACLs in the simulator (issue 17).
//
// A seed with Options.Auth.On runs its brokers with the ACL authorizer
// (allow.everyone.if.no.acl.found off) and every simulated client
// authenticated with SASL/SCRAM-SHA-256:
//
//   - Users. "admin" and "sim" are bootstrap users (node.Config.
//     BootstrapUsers, credentials derived here from the seed) and super
//     users: admin runs setup and the ACL workload's changes, sim is the
//     principal of the existing workload (producers, fetchers, consumers),
//     which the ACLs must not disturb. "alice" and "bob" are created by
//     admin with AlterUserScramCredentials and are the principals the ACLs
//     are about (authwork.go).
//   - Sessions. The protocol server (node/kafka) owns SASL on a real
//     broker; the simulator calls Reactor.HandleRequest directly, so it
//     plays that part: brokerAuth, one per broker incarnation, runs
//     node/sasl's server exchange for SaslHandshake/SaslAuthenticate and
//     keeps the authenticated sessions. A client authenticates once per
//     broker incarnation (clientAuth, kclient.go's callAs) with its own
//     SCRAM code (authscram.go); a crash or restart forgets the broker's
//     sessions and the client logs in again.
//   - Nonces. Each broker's SCRAM server nonces come from a generator
//     seeded from the node's seeded randomness (Env.Rand), so an exchange
//     replays bit for bit; the trace logs every server nonce
//     (TestAuthSameSeedSameNonces).

import (
	"fmt"
	"math/rand"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/sasl"
)

// AuthOptions turn on authentication and ACLs in a run.
type AuthOptions struct {
	On bool
	// AdminThinkMax bounds the admin's pause between ACL and user changes;
	// ClientThinkMax the ACL clients' pause between requests.
	AdminThinkMax  time.Duration
	ClientThinkMax time.Duration
	// UserChangeProb is the chance an admin change is a user's deletion or
	// re-creation instead of an ACL's.
	UserChangeProb float64
}

// authSeedShare is the share of default seeds that run with
// authentication and ACLs on.
const authSeedShare = 0.35

// chooseAuth draws a seed's authentication options from a generator of
// its own, so the draws of ChooseOptions before it stay what they were.
func chooseAuth(seed int64) AuthOptions {
	rng := rand.New(rand.NewSource(seed ^ 0xa17ac15))
	if rng.Float64() >= authSeedShare {
		return AuthOptions{}
	}
	return AuthOptions{
		On:             true,
		AdminThinkMax:  time.Duration(20+rng.Intn(150)) * time.Millisecond,
		ClientThinkMax: time.Duration(5+rng.Intn(30)) * time.Millisecond,
		UserChangeProb: []float64{0, 0.1, 0.25}[rng.Intn(3)],
	}
}

// WithAuth returns o with authentication and ACLs on (with the seed's own
// rates when it drew them, else middling ones).
func (o Options) WithAuth() Options {
	if !o.Auth.On {
		o.Auth = AuthOptions{On: true, AdminThinkMax: 80 * time.Millisecond, ClientThinkMax: 15 * time.Millisecond, UserChangeProb: 0.1}
	}
	return o
}

func (a AuthOptions) String() string {
	if !a.On {
		return "auth: off"
	}
	return fmt.Sprintf("auth: SCRAM-SHA-256 + ACL authorizer; admin think<=%v, client think<=%v, user changes=%.2f",
		a.AdminThinkMax, a.ClientThinkMax, a.UserChangeProb)
}

// The simulator's users.
const (
	adminUser    = "admin"
	workloadUser = "sim"
)

// aclUsers are the principals the ACL workload's bindings are about.
var aclUsers = []string{"alice", "bob"}

// passwordOf is a user's password: fixed per name, so a re-created user
// logs in with what its clients know.
func passwordOf(user string) string { return "pw-" + user + "-secret" }

// BrokerAuth is what every broker of an authenticated run shares: the
// bootstrap users and the ledger the brokers' SASL servers report to.
type BrokerAuth struct {
	Bootstrap []controller.User
	ledger    *authLedger
}

// newBrokerAuth derives the bootstrap users' credentials with salts drawn
// from the seed (not from the world's generator: the run's other draws
// stay as they were).
func newBrokerAuth(seed int64, cache saltCache) (*BrokerAuth, error) {
	rng := rand.New(rand.NewSource(seed ^ 0xb007))
	ba := &BrokerAuth{ledger: &authLedger{}}
	for _, u := range []string{adminUser, workloadUser} {
		cred, err := scramCredential(rng, cache, u)
		if err != nil {
			return nil, err
		}
		ba.Bootstrap = append(ba.Bootstrap, controller.User{Name: u, Scram: []controller.ScramCredential{cred}})
	}
	return ba, nil
}

// scramCredential derives a SCRAM-SHA-256 credential for user's password
// with a fresh salt.
func scramCredential(rng *rand.Rand, cache saltCache, user string) (controller.ScramCredential, error) {
	salt := make([]byte, 16)
	for i := range salt {
		salt[i] = byte(rng.Intn(256))
	}
	salted, err := cache.salted(passwordOf(user), salt, scramIterations)
	if err != nil {
		return controller.ScramCredential{}, err
	}
	stored, server := scramKeys(salted)
	return controller.ScramCredential{Mechanism: scramMechanismID, Salt: salt, Iterations: scramIterations,
		StoredKey: stored, ServerKey: server}, nil
}

// authBrokerConfig is o's broker configuration with authentication on
// when o asks for it (ba and cache nil otherwise).
func authBrokerConfig(o Options) (BrokerConfig, *BrokerAuth, saltCache) {
	bc := o.Broker
	if !o.Auth.On {
		return bc, nil, nil
	}
	cache := saltCache{}
	ba, err := newBrokerAuth(o.Seed, cache)
	if err != nil {
		panic(fmt.Sprintf("sim: deriving bootstrap credentials: %v", err)) // PBKDF2 with fixed, valid parameters
	}
	bc.Auth = ba
	return bc, ba, cache
}

// configure sets a broker's authorizer, super users and bootstrap users.
func (ba *BrokerAuth) configure(cfg *node.Config) {
	cfg.Security = node.SecurityConfig{Authorizer: node.AuthorizerACL,
		SuperUsers: []string{sasl.UserPrincipal(adminUser), sasl.UserPrincipal(workloadUser)}}
	cfg.BootstrapUsers = ba.Bootstrap
}

// authLedger is what the brokers' SASL servers saw, for the checker: each
// exchange's credential at its first and last step and its outcome.
type authLedger struct {
	exchanges []*authExchange
	nonces    int
}

type authExchange struct {
	node      int32
	user      string
	hadFirst  bool   // the broker held a credential at client-first
	saltFirst string // its salt
	hadFinal  bool   // and at client-final
	saltFinal string
	finished  bool // the final step ran
	ok        bool
	reason    string
}

// brokerAuth is one broker incarnation's SASL server and sessions: the
// part of node/kafka's connection the simulator plays.
type brokerAuth struct {
	id        int32
	r         *node.Reactor
	srv       *sasl.Server
	ledger    *authLedger
	clock     func() time.Time
	trace     func(string, ...any)
	exchanges map[uint64]*pendingExchange
	sessions  map[uint64]string // session -> principal
}

type pendingExchange struct {
	ex  sasl.Exchange
	rec *authExchange
}

// randReader reads bytes from a seeded generator.
type randReader struct{ rng *rand.Rand }

func (rr randReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(rr.rng.Intn(256))
	}
	return len(p), nil
}

// reactorCredentials looks SCRAM credentials up in the broker's applied
// metadata; the simulator is one thread, so directly.
type reactorCredentials struct{ r *node.Reactor }

func (rc reactorCredentials) LookupScram(user, mechanism string) (sasl.ScramCredential, bool, error) {
	m := controller.MechanismScramSHA256
	if mechanism == sasl.ScramSHA512 {
		m = controller.MechanismScramSHA512
	}
	c, ok := rc.r.ScramCredential(user, m)
	return sasl.ScramCredential{Salt: c.Salt, Iterations: int(c.Iterations), StoredKey: c.StoredKey, ServerKey: c.ServerKey}, ok, nil
}

// start builds an incarnation's SASL server. Its nonce generator is seeded
// from the node's own seeded randomness.
func (ba *BrokerAuth) start(r *node.Reactor, env Env) (*brokerAuth, error) {
	nonces := randReader{rand.New(rand.NewSource(env.Rand.Int63()))}
	srv, err := sasl.NewServer(sasl.Config{Mechanisms: []string{sasl.ScramSHA256}, Credentials: reactorCredentials{r}, Rand: nonces})
	if err != nil {
		return nil, err
	}
	return &brokerAuth{id: int32(env.ID), r: r, srv: srv, ledger: ba.ledger, clock: env.Clock.Now, trace: env.Tracef,
		exchanges: map[uint64]*pendingExchange{}, sessions: map[uint64]string{}}, nil
}

// principal is the principal of an authenticated session.
func (a *brokerAuth) principal(session uint64) (string, bool) {
	p, ok := a.sessions[session]
	return p, ok
}

// serve answers SaslHandshake and SaslAuthenticate on a session, as
// node/kafka's connection does: an unknown mechanism or a failed step ends
// the exchange.
func (a *brokerAuth) serve(session uint64, req kmsg.Request) kmsg.Response {
	switch q := req.(type) {
	case *kmsg.SASLHandshakeRequest:
		resp := q.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.SupportedMechanisms = a.srv.Mechanisms()
		ex, err := a.srv.Start(q.Mechanism)
		if err != nil {
			resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
			return resp
		}
		delete(a.sessions, session)
		a.exchanges[session] = &pendingExchange{ex: ex}
		return resp
	case *kmsg.SASLAuthenticateRequest:
		resp := q.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		pe := a.exchanges[session]
		if pe == nil {
			resp.ErrorCode = kerr.IllegalSaslState.Code
			return resp
		}
		a.observe(pe, q.SASLAuthBytes)
		out, done, err := pe.ex.Step(q.SASLAuthBytes, a.clock())
		if err != nil {
			delete(a.exchanges, session)
			pe.rec.finished, pe.rec.reason = true, err.Error()
			resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, kmsg.StringPtr(err.Error())
			a.trace("sasl: session %d of %s refused: %v", session, pe.rec.user, err)
			return resp
		}
		if pe.rec.finished = done; done {
			delete(a.exchanges, session)
			pe.rec.ok = true
			a.sessions[session] = pe.ex.Principal()
			a.trace("sasl: session %d authenticated as %s", session, pe.ex.Principal())
		} else {
			a.ledger.nonces++
			a.trace("sasl: session %d server-first %s", session, out)
		}
		resp.SASLAuthBytes = out
		return resp
	}
	return nil
}

// observe records the credential the broker holds at each step of an
// exchange, for the checker (authcheck.go).
func (a *brokerAuth) observe(pe *pendingExchange, msg []byte) {
	if pe.rec == nil {
		user := scramUserOf(msg)
		pe.rec = &authExchange{node: a.id, user: user}
		a.ledger.exchanges = append(a.ledger.exchanges, pe.rec)
		c, ok := a.r.ScramCredential(user, controller.MechanismScramSHA256)
		pe.rec.hadFirst, pe.rec.saltFirst = ok, string(c.Salt)
		return
	}
	c, ok := a.r.ScramCredential(pe.rec.user, controller.MechanismScramSHA256)
	pe.rec.hadFinal, pe.rec.saltFinal = ok, string(c.Salt)
}

// scramUserOf is the user a client-first message names ("" if none).
func scramUserOf(msg []byte) string {
	s := string(msg)
	for i := 0; i+2 < len(s); i++ {
		if s[i] == ',' && s[i+1] == 'n' && s[i+2] == '=' {
			rest := s[i+3:]
			for j := 0; j < len(rest); j++ {
				if rest[j] == ',' {
					return rest[:j]
				}
			}
			return rest
		}
	}
	return ""
}
