package sim

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
)

// clientAuth logs simulated clients in: one SCRAM session per user and
// broker incarnation, shared by that user's requests (as a client's
// connection is), made on first use and dropped when the broker answers
// that it does not know it (it restarted) or cannot be reached.
type clientAuth struct {
	k        *kafkaNet
	rng      *rand.Rand // client nonces
	cache    saltCache
	sessions map[sessionKey]uint64
	waiting  map[sessionKey][]func(uint64, error)
	next     uint64
	logins   int
	refused  int
}

type sessionKey struct {
	node netx.NodeID
	user string
}

// errAuthFailed: the broker refused the login (SASL_AUTHENTICATION_FAILED
// or a SCRAM check). The request was not sent.
var errAuthFailed = errors.New("authentication failed")

func newClientAuth(k *kafkaNet, rng *rand.Rand, cache saltCache) *clientAuth {
	return &clientAuth{k: k, rng: rng, cache: cache, sessions: map[sessionKey]uint64{}, waiting: map[sessionKey][]func(uint64, error){}}
}

// session calls done with the user's session on node id, logging in first
// if there is none. Concurrent callers share one login.
func (ca *clientAuth) session(id netx.NodeID, user string, timeout time.Duration, done func(uint64, error)) {
	key := sessionKey{id, user}
	if s, ok := ca.sessions[key]; ok {
		done(s, nil)
		return
	}
	ca.waiting[key] = append(ca.waiting[key], done)
	if len(ca.waiting[key]) > 1 {
		return
	}
	ca.next++
	s := ca.next
	ca.login(id, user, s, timeout, func(err error) {
		if err == nil {
			ca.sessions[key] = s
		}
		ws := ca.waiting[key]
		delete(ca.waiting, key)
		for _, w := range ws {
			w(s, err)
		}
	})
}

// forget drops a session the broker no longer knows.
func (ca *clientAuth) forget(id netx.NodeID, user string, session uint64) {
	key := sessionKey{id, user}
	if ca.sessions[key] == session {
		delete(ca.sessions, key)
	}
}

// login runs SaslHandshake and the SCRAM exchange in SaslAuthenticate v1
// requests.
func (ca *clientAuth) login(id netx.NodeID, user string, session uint64, timeout time.Duration, done func(error)) {
	ca.logins++
	nonce := make([]byte, 18)
	for i := range nonce {
		nonce[i] = byte(ca.rng.Intn(256))
	}
	sc := &scramClient{user: user, password: passwordOf(user), cache: ca.cache, nonce: base64.RawStdEncoding.EncodeToString(nonce)}
	fail := func(err error) {
		if errors.Is(err, errAuthFailed) {
			ca.refused++
		}
		done(err)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, scramMechanism
	ca.raw(id, session, hs, timeout, func(resp kmsg.Response, err error) {
		if err != nil {
			fail(err)
			return
		}
		if code := resp.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
			fail(fmt.Errorf("%w: handshake: %s", errAuthFailed, errName(code)))
			return
		}
		ca.step(id, session, sc.first(), timeout, func(serverFirst []byte, err error) {
			if err != nil {
				fail(err)
				return
			}
			final, err := sc.final(serverFirst)
			if err != nil {
				fail(fmt.Errorf("%w: %v", errAuthFailed, err))
				return
			}
			ca.step(id, session, final, timeout, func(serverFinal []byte, err error) {
				if err == nil {
					if err = sc.verify(serverFinal); err != nil {
						err = fmt.Errorf("%w: %v", errAuthFailed, err)
					}
				}
				if err != nil {
					fail(err)
					return
				}
				done(nil)
			})
		})
	})
}

// step sends one SaslAuthenticate and returns the server's bytes.
func (ca *clientAuth) step(id netx.NodeID, session uint64, msg []byte, timeout time.Duration, done func([]byte, error)) {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = 1, msg
	ca.raw(id, session, req, timeout, func(resp kmsg.Response, err error) {
		if err != nil {
			done(nil, err)
			return
		}
		r := resp.(*kmsg.SASLAuthenticateResponse)
		if r.ErrorCode != 0 {
			if r.ErrorCode == kerr.SaslAuthenticationFailed.Code {
				done(nil, errAuthFailed)
				return
			}
			done(nil, fmt.Errorf("%w: %s", errAuthFailed, errName(r.ErrorCode)))
			return
		}
		done(r.SASLAuthBytes, nil)
	})
}

// raw sends a SASL request to the broker's session layer (brokerAuth), not
// to the reactor, encoded and decoded as on the wire.
func (ca *clientAuth) raw(id netx.NodeID, session uint64, req kmsg.Request, timeout time.Duration, done func(kmsg.Response, error)) {
	k := ca.k
	finished := false
	finish := func(resp kmsg.Response, err error) {
		if !finished {
			finished = true
			done(resp, err)
		}
	}
	wire, err := roundTripRequest(req)
	if err != nil {
		k.w.After(0, func() { finish(nil, err) })
		return
	}
	k.calls[req.Key()]++
	k.w.After(timeout, func() { finish(nil, errClientTimeout) })
	k.w.Call(id, k.latency(), "kafka "+kmsg.NameForKey(req.Key()), func(inst Instance) {
		b, ok := inst.(*Broker)
		if !ok || b.auth == nil {
			return
		}
		resp := b.auth.serve(session, wire)
		out, err := roundTripResponse(wire, resp)
		k.w.After(k.latency(), func() { finish(out, err) })
	}, func() { finish(nil, errConnRefused) })
}
