package node

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client identifies the connection a request came from.
type Client struct {
	ConnID    uint64
	ClientID  string
	Remote    string
	Principal string // the authenticated principal, e.g. "User:alice"; "User:ANONYMOUS" when none
	Listener  string // the name of the listener the connection came in on, e.g. "PLAINTEXT"
	// Prepared is what Prepare computed for this request off the reactor,
	// or nil (the reactor then does that work itself).
	Prepared *Prepared
	// AnswerMade, if set, is called when the handler makes an answer
	// that then leaves late (the answer-delayed BUGGIFY site; simulation
	// only), so a checker can look at the broker as it was when the
	// answer was made, not when it left.
	AnswerMade func()
	// Trace, when the runtime traces this request, collects its stage
	// timings (trace.go); nil otherwise.
	Trace *Trace
}

// APIRange is one advertised API version range.
type APIRange struct {
	Key, Min, Max int16
}

// handler serves one Kafka API. It must call respond exactly once (with nil
// when the request gets no response), now or from a later event. The
// handlers are listed in apis (apis.go).
type handler func(r *Reactor, c Client, req kmsg.Request, respond func(kmsg.Response))

// HandleRequest serves one decoded client request. The protocol server has
// already checked the version against Versions; a request it could not map
// to a handler is answered by closing the connection there. respond is
// called exactly once: a request the handler leaves waiting is answered by
// its deadline at the latest (deadline.go).
func (r *Reactor) HandleRequest(c Client, req kmsg.Request, respond func(kmsg.Response)) {
	a := apiFor(req.Key())
	if a.serve == nil || r.stopped {
		respond(nil)
		return
	}
	r.stats.Requests[req.Key()]++
	if r.buggify(bugConnClosedBeforeServing) {
		respond(nil) // BUGGIFY: the connection dropped before the request was read
		return
	}
	p := &pendingRequest{r: r, req: req, respond: r.auditChanges(c, req, respond)}
	if r.buggify(bugAnswerDelayed) {
		// The answer, once made, leaves late (a slow network): the
		// request counts as answered when the handler answers.
		send := p.respond
		p.respond = func(resp kmsg.Response) {
			if c.AnswerMade != nil {
				c.AnswerMade()
			}
			r.answerMaybeLate(bugAnswerDelayed, resp, send)
		}
	}
	a.serve(r, c, req, p.answer)
	if !p.answered {
		p.armDeadline()
	}
	r.queueProcess()
}

// answerMaybeLate answers resp now or, when BUGGIFY site s fires (or has
// just fired: bugAnswerDelayed decides in HandleRequest), up to 300 ms
// later, as a slow network or a loaded coordinator would. A group
// coordinator's late answer still goes through the request's deadline
// (deadline.go).
func (r *Reactor) answerMaybeLate(s bugSite, resp kmsg.Response, respond func(kmsg.Response)) {
	if s != bugAnswerDelayed && !r.buggify(s) {
		respond(resp)
		return
	}
	r.env.Sched.After(r.buggifyDelay(300*time.Millisecond), func() { respond(resp) })
}
