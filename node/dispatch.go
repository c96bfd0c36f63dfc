package node

import (
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
}

// APIRange is one advertised API version range.
type APIRange struct {
	Key, Min, Max int16
}

// handler serves one Kafka API. It must call respond exactly once (with nil
// when the request gets no response), now or from a later event.
type handler func(r *Reactor, c Client, req kmsg.Request, respond func(kmsg.Response))

type api struct {
	min, max int16
	serve    handler
}

// apis is the table of Kafka APIs this broker serves, by key. Each entry's
// file (api_*.go) says why its range is what it is. ApiVersions itself is
// answered by the protocol server from this table.
var apis = map[int16]api{}

func register(key int16, min, max int16, h handler) {
	apis[key] = api{min: min, max: max, serve: h}
}

// Versions returns the advertised version table, sorted by key, including
// ApiVersions (0-3) which the protocol server answers.
func Versions() []APIRange {
	out := []APIRange{{Key: 18, Min: 0, Max: 3}}
	for _, k := range sortedKeys(apis) {
		a := apis[k]
		out = append(out, APIRange{Key: k, Min: a.min, Max: a.max})
	}
	return out
}

// HandleRequest serves one decoded client request. The protocol server has
// already checked the version against Versions; a request it could not map
// to a handler is answered by closing the connection there. respond is
// called exactly once: a request the handler leaves waiting is answered by
// its deadline at the latest (deadline.go).
func (r *Reactor) HandleRequest(c Client, req kmsg.Request, respond func(kmsg.Response)) {
	a, ok := apis[req.Key()]
	if !ok || r.stopped {
		respond(nil)
		return
	}
	r.stats.Requests[req.Key()]++
	p := &pendingRequest{r: r, req: req, respond: respond}
	a.serve(r, c, req, p.answer)
	if !p.answered {
		p.armDeadline()
	}
	r.queueProcess()
}
