package sim

import (
	"errors"
	"fmt"
	"math/rand"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node"
)

// kafkaNet is how simulated clients reach brokers: a typed request goes to
// the node's Reactor.HandleRequest, the handler the Kafka server calls,
// through World.Call (latency, pause gate, incarnation check). Requests and
// responses are encoded and decoded on the way, as on a wire: the broker
// owns its copy of the request (it rewrites produced batches in place) and
// the wire format gets exercised. A client-side timeout in simulated time
// ends every call: done runs exactly once.
type kafkaNet struct {
	w      *World
	rng    *rand.Rand
	latMin time.Duration
	latMax time.Duration
	conns  uint64
	// calls counts requests by API key, for the run's figures.
	calls map[int16]int
	// auth logs clients in (authclient.go) in a run with authentication;
	// user is then the principal of call and callAt.
	auth *clientAuth
	user string
	// faults are the client-link faults (faults_more.go); nil: none.
	faults *clientFaults
}

var (
	// errClientTimeout: no answer within the client's timeout. The request
	// may have been served.
	errClientTimeout = errors.New("client timeout")
	// errConnRefused: the node was down, or its incarnation ended before
	// the request arrived (connection refused or reset). The request was
	// not served by that incarnation.
	errConnRefused = errors.New("connection refused")
	// errNoResponse: the broker answered with no response (it was stopping).
	errNoResponse = errors.New("connection closed without a response")
)

func (k *kafkaNet) latency() time.Duration {
	d := k.latMin
	if span := k.latMax - k.latMin; span > 0 {
		d += time.Duration(k.rng.Int63n(int64(span)))
	}
	return d
}

// call sends req to node id and calls done with its response or an error.
func (k *kafkaNet) call(id netx.NodeID, req kmsg.Request, timeout time.Duration, done func(kmsg.Response, error)) {
	k.callAt(id, req, timeout, nil, func(resp kmsg.Response, err error, _ bool) { done(resp, err) })
}

// callAt is call with a probe run on the broker's side at the instant it
// answers; its verdict reaches done with the response (false when there
// was no answer).
func (k *kafkaNet) callAt(id netx.NodeID, req kmsg.Request, timeout time.Duration, probe func() bool, done func(kmsg.Response, error, bool)) {
	k.callAs(k.user, id, req, timeout, nil, probe, done)
}

// callAs is callAt as a user (in a run with authentication: the client
// first logs in to the broker if it holds no session there, auth.go), with
// arrive run on the broker's side at the instant the request reaches it,
// before the broker sees it.
func (k *kafkaNet) callAs(user string, id netx.NodeID, req kmsg.Request, timeout time.Duration, arrive func(*Broker, string),
	probe func() bool, done func(kmsg.Response, error, bool)) {
	finished := false
	finish := func(resp kmsg.Response, err error, probed bool) {
		if finished {
			return
		}
		finished = true
		done(resp, err, probed)
	}
	wire, err := roundTripRequest(req)
	if err != nil {
		k.w.After(0, func() { finish(nil, err, false) })
		return
	}
	k.w.After(timeout, func() { finish(nil, errClientTimeout, false) })
	if k.auth == nil {
		k.deliver(id, 0, "", wire, arrive, probe, finish)
		return
	}
	k.auth.session(id, user, timeout, func(session uint64, err error) {
		if err != nil {
			finish(nil, err, false)
			return
		}
		k.deliver(id, session, user, wire, arrive, probe, func(resp kmsg.Response, err error, probed bool) {
			if err == errConnRefused {
				k.auth.forget(id, user, session)
			}
			finish(resp, err, probed)
		})
	})
}

// deliver sends a decoded request to the broker on a session (0: none).
func (k *kafkaNet) deliver(id netx.NodeID, session uint64, user string, wire kmsg.Request, arrive func(*Broker, string),
	probe func() bool, finish func(kmsg.Response, error, bool)) {
	k.conns++
	k.calls[wire.Key()]++
	conn := k.conns
	name := kmsg.NameForKey(wire.Key())
	if k.faults.dropRequest(id) {
		return // a cut client link: the client's timeout ends the call
	}
	k.w.Call(id, k.latency(), "kafka "+name, func(inst Instance) {
		b, ok := inst.(*Broker)
		if !ok {
			return
		}
		// As the runtime does (node/runtime/runtime.go), the request is
		// prepared (its batches validated) before the reactor sees it.
		cl := node.Client{ConnID: conn, ClientID: "sim", Prepared: node.Prepare(wire)}
		// A read's verdict is taken when the broker makes its answer:
		// an answer made under a lease and delayed on its way out
		// (BUGGIFY answer-delayed) was not served by a deposed leader,
		// whoever leads when it leaves.
		var made, madeProbed bool
		cl.AnswerMade = func() {
			if !made {
				made, madeProbed = true, probe != nil && probe()
			}
		}
		if b.auth != nil && user != "" {
			p, ok := b.auth.principal(session)
			if !ok { // this incarnation never authenticated the session: closed
				k.w.After(k.latency(), func() { finish(nil, errConnRefused, false) })
				return
			}
			cl.Principal = p
		}
		if arrive != nil {
			arrive(b, cl.Principal)
		}
		b.R.HandleRequest(cl, wire, func(resp kmsg.Response) {
			lat := k.latency()
			if resp == nil {
				k.w.After(lat, func() { finish(nil, errNoResponse, false) })
				return
			}
			probed := madeProbed
			if !made {
				probed = probe != nil && probe()
			}
			if k.faults.dropResponse() {
				return // lost on the way back: the client's timeout ends the call
			}
			out, err := roundTripResponse(wire, resp)
			k.w.After(lat, func() { finish(out, err, probed) })
		})
	}, func() { finish(nil, errConnRefused, false) })
}

// roundTripRequest encodes req and decodes it into a fresh request of the
// same version.
func roundTripRequest(req kmsg.Request) (kmsg.Request, error) {
	b := req.AppendTo(nil)
	out := kmsg.RequestForKey(req.Key())
	if out == nil {
		return nil, fmt.Errorf("no request type for key %d", req.Key())
	}
	out.SetVersion(req.GetVersion())
	if err := out.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("re-reading %s: %w", kmsg.NameForKey(req.Key()), err)
	}
	return out, nil
}

// roundTripResponse encodes the broker's response and decodes it as the
// client would.
func roundTripResponse(req kmsg.Request, resp kmsg.Response) (kmsg.Response, error) {
	resp.SetVersion(req.GetVersion())
	b := resp.AppendTo(nil)
	out := req.ResponseKind()
	if err := out.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("decoding %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return out, nil
}
