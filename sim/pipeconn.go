package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node"
	"github.com/floe-broker/floe/node/kafka"
)

// pipeMaxInFlight is how many requests a client keeps in flight on one
// connection (franz-go's and librdkafka's default for idempotent
// producers, and Kafka's idempotence window).
const pipeMaxInFlight = 5

// errConnLost: the connection closed (the broker crashed or restarted, a
// request timed out, the broker hung up) with the request pending. It may
// have been served.
var errConnLost = errors.New("connection lost with the request pending")

// Coverage rows of the pipelined connections and producer.
const (
	covPipeFull     = "produce sent with 4 others in flight on its connection"
	covPipeHeldBack = "response held back behind an earlier unanswered request"
	covPipeResent   = "pipelined batch resent behind a failed earlier one"
)

// pipeConn is one client's connection to one broker incarnation, kept and
// reused, with up to pipeMaxInFlight requests in flight. Requests travel
// in order (a TCP stream: each arrives no earlier than the one before).
// On the broker's side each request reserves a slot of node/kafka's
// InOrder, the ordering type production's connections use, as it arrives;
// the broker fills slots in any order, and only the ready head leaves,
// also in order. The client checks every response against the oldest
// request it awaits (a correlation ID that does not match is a violation:
// the broker answered out of order).
//
// The connection dies, failing every pending request with errConnLost
// (an unknown outcome), when a request times out, when the broker closes
// it (answers nil), or when the broker's incarnation changes (noticed on
// the next send or arrival). A connection that cannot be made (the broker
// is down) fails its sends with errConnRefused: never served.
type pipeConn struct {
	r    *run
	id   netx.NodeID
	inc  uint64
	conn uint64 // the connection ID the broker sees
	dead bool
	// refused: the broker was down when the client dialled.
	refused bool
	// blackholed: a request or response was lost on a cut client link;
	// nothing more goes through (the next timeout kills the connection).
	blackholed bool

	// The broker's side: slots in arrival order.
	order *kafka.InOrder[*pipeReq]
	// The client's side: requests awaiting their response, in send order.
	pending  []*pipeReq
	corrNext int32
	// The stream's clocks: the latest arrival at the broker and at the
	// client so far; nothing overtakes them.
	sentUntil, backUntil time.Duration
	ready                []*pipeReq
}

type pipeReq struct {
	corr     int32
	ticket   uint64
	wire     kmsg.Request
	resp     kmsg.Response
	done     func(kmsg.Response, error)
	finished bool
}

// dial returns a live connection to broker id, reusing the last one when
// it is still up on the same incarnation.
func (r *run) dial(conns map[netx.NodeID]*pipeConn, id netx.NodeID) *pipeConn {
	c := conns[id]
	if c != nil && !c.dead {
		if c.refused || !r.w.Up(id) || r.w.Incarnation(id) != c.inc {
			c.kill() // reset: the broker restarted under it
		} else {
			return c
		}
	}
	r.kn.conns++
	c = &pipeConn{r: r, id: id, conn: r.kn.conns, order: kafka.NewInOrder[*pipeReq](pipeMaxInFlight)}
	if r.w.Up(id) {
		c.inc = r.w.Incarnation(id)
	} else {
		c.refused = true
	}
	conns[id] = c
	return c
}

// full reports whether pipeMaxInFlight requests are pending.
func (c *pipeConn) full() bool { return len(c.pending) >= pipeMaxInFlight }

// send sends req; done gets its response, or an error, exactly once.
// The caller checks full first.
func (c *pipeConn) send(req kmsg.Request, timeout time.Duration, done func(kmsg.Response, error)) {
	r := c.r
	wire, err := roundTripRequest(req)
	if err != nil {
		r.w.After(0, func() { done(nil, err) })
		return
	}
	if c.dead || c.full() {
		r.w.After(0, func() { done(nil, errConnLost) })
		return
	}
	r.kn.calls[wire.Key()]++
	if c.refused {
		r.w.After(r.kn.latency(), func() { done(nil, errConnRefused) })
		return
	}
	if wire.Key() == 0 && len(c.pending) == pipeMaxInFlight-1 {
		r.cover(covPipeFull)
	}
	c.corrNext++
	pr := &pipeReq{corr: c.corrNext, wire: wire, done: done}
	c.pending = append(c.pending, pr)
	r.w.After(timeout, func() {
		if !pr.finished {
			c.kill()
		}
	})
	if c.blackholed || r.kn.faults.dropRequest(c.id) {
		c.blackholed = true
		return
	}
	now := r.now()
	arrive := max(now+r.kn.latency(), c.sentUntil)
	c.sentUntil = arrive
	name := "kafka " + kmsg.NameForKey(wire.Key())
	r.w.Call(c.id, arrive-now, name, func(inst Instance) { c.arrive(inst, pr) }, func() { c.kill() })
}

// arrive runs on the broker as pr reaches it: it takes a slot and hands
// the request to the broker.
func (c *pipeConn) arrive(inst Instance, pr *pipeReq) {
	b, ok := inst.(*Broker)
	if c.dead || !ok || c.r.w.Incarnation(c.id) != c.inc {
		c.kill()
		return
	}
	ticket, ok := c.order.Reserve(pr)
	if !ok { // the client keeps at most pipeMaxInFlight pending
		c.r.violation("client", fmt.Sprintf("connection %d to n%d: more than %d requests in flight", c.conn, c.id, pipeMaxInFlight))
		c.kill()
		return
	}
	pr.ticket = ticket
	// Prepared before the reactor sees it, as the runtime does.
	cl := node.Client{ConnID: c.conn, ClientID: "sim-pipelined", Prepared: node.Prepare(pr.wire)}
	b.R.HandleRequest(cl, pr.wire, func(resp kmsg.Response) { c.respond(pr, resp) })
}

// respond is the broker answering pr: its slot is filled, and the ready
// head leaves for the client.
func (c *pipeConn) respond(pr *pipeReq, resp kmsg.Response) {
	if c.dead {
		return
	}
	if resp == nil { // the broker closes the connection
		c.kill()
		return
	}
	pr.resp = resp
	head, ok := c.order.Fill(pr.ticket)
	if !ok {
		return
	}
	if !head {
		c.r.cover(covPipeHeldBack)
	}
	c.ready = c.order.ReadyHead(c.ready[:0])
	c.order.Release(len(c.ready))
	for _, out := range c.ready {
		if c.blackholed || c.r.kn.faults.dropResponse() {
			c.blackholed = true
			break
		}
		now := c.r.now()
		back := max(now+c.r.kn.latency(), c.backUntil)
		c.backUntil = back
		out := out
		c.r.w.After(back-now, func() { c.deliver(out) })
	}
	clear(c.ready)
}

// deliver is a response reaching the client: it must answer the oldest
// request the client awaits.
func (c *pipeConn) deliver(pr *pipeReq) {
	if c.dead {
		return
	}
	if len(c.pending) == 0 || c.pending[0] != pr {
		want := int32(-1)
		if len(c.pending) > 0 {
			want = c.pending[0].corr
		}
		c.r.violation("client", fmt.Sprintf("connection %d to n%d: response with correlation ID %d while the oldest request awaiting one has %d (responses out of request order)",
			c.conn, c.id, pr.corr, want))
		c.kill()
		return
	}
	c.pending = c.pending[1:]
	pr.finished = true
	out, err := roundTripResponse(pr.wire, pr.resp)
	pr.done(out, err)
}

// kill closes the connection: every pending request fails with
// errConnLost.
func (c *pipeConn) kill() {
	if c.dead {
		return
	}
	c.dead = true
	c.order.TakeAll(nil)
	pend := c.pending
	c.pending = nil
	for _, pr := range pend {
		if !pr.finished {
			pr.finished = true
			pr.done(nil, errConnLost)
		}
	}
}
