package node

// A registry of outgoing peer calls awaiting an answer.
//
// A broker that asks another broker something over the peer network (a
// remote read, share_read.go; a forwarded share request, share_forward.go)
// keeps the waiting call until its answer comes or its timeout passes,
// whichever is first, and acts on it exactly once. The frames carry the
// call's (nonce, id): id is this registry's sequence (1, 2, ...), and
// nonce, drawn once per incarnation, tells this incarnation's ids from an
// earlier one's (a restarted broker counts from 1 again, and the network
// may still deliver answers to the calls of its former life).
//
// The contract of rpcCalls[T]:
//
//   - register(h, payload, timeout, expire) -> (nonce, id): records payload
//     under the next id and arms a timer of timeout (h.after). The nonce is
//     drawn from h.rpcNonce (never 0) at the first register, not before,
//     and kept for the registry's life: the Rand stream, and so every
//     simulated run, depends on when that first call is made only.
//   - take(h, nonce, id) -> (payload, ok): removes the call registered
//     under (nonce, id) and cancels its timer (h.cancelTimer). ok is false,
//     and nothing changes, when nonce is not this registry's (an answer to
//     an earlier incarnation) or no call waits under id (a duplicate or
//     late answer, or one already taken or expired).
//   - expiry: a call still registered when its timer fires is taken and
//     its payload handed to expire, once.
//
// So every registered payload comes out exactly once: from take, or to
// expire. The registry never ranges over its map: no behaviour depends on
// map order. Like the reactor it belongs to, it is not safe for concurrent
// use, and it reads no clock: timers are the host's (deadline.go).
//
// The zero value is an empty registry.

import (
	"time"

	"github.com/floe-broker/floe/clock"
)

// rpcHost is what an rpcCalls registry needs of its reactor: the nonce
// draw and the timers.
type rpcHost interface {
	// rpcNonce draws a nonce: never 0.
	rpcNonce() uint64
	after(d time.Duration, fn func()) clock.TimerID
	cancelTimer(id clock.TimerID)
}

// rpcNonce draws a nonce for a call registry from the reactor's Rand.
func (r *Reactor) rpcNonce() uint64 { return r.env.Rand.Uint64() | 1 }

// rpcCalls are the calls of one kind awaiting an answer (see above).
type rpcCalls[T any] struct {
	seq     uint64
	nonce   uint64 // drawn at the first register; 0 until then
	pending map[uint64]rpcCall[T]
}

type rpcCall[T any] struct {
	payload T
	timer   clock.TimerID
}

// register records payload as a call awaiting an answer and returns the
// (nonce, id) its frames carry. If no answer is taken within timeout,
// expire gets payload.
func (c *rpcCalls[T]) register(h rpcHost, payload T, timeout time.Duration, expire func(T)) (nonce, id uint64) {
	if c.pending == nil {
		c.pending = map[uint64]rpcCall[T]{}
	}
	if c.nonce == 0 {
		c.nonce = h.rpcNonce()
	}
	c.seq++
	nonce, id = c.nonce, c.seq
	tid := h.after(timeout, func() {
		if p, ok := c.take(h, nonce, id); ok {
			expire(p)
		}
	})
	c.pending[id] = rpcCall[T]{payload: payload, timer: tid}
	return nonce, id
}

// take removes the call answered by (nonce, id) and cancels its timeout;
// ok is false when no call of this incarnation waits under id.
func (c *rpcCalls[T]) take(h rpcHost, nonce, id uint64) (payload T, ok bool) {
	call, found := c.pending[id]
	if nonce == 0 || nonce != c.nonce || !found {
		return payload, false
	}
	delete(c.pending, id)
	h.cancelTimer(call.timer)
	return call.payload, true
}
