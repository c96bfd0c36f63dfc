package node

import (
	"encoding/binary"
	"time"

	"github.com/floe-broker/floe/consensus"
)

// Metadata barriers: "run this once my metadata holds everything the
// controller had committed when I asked". A broker's metadata lags the
// controller's by however long replication takes, or without bound while
// it is cut off from the controller's leader; a decision that must not
// miss a change a client was already told of (say, a dead-letter topic
// set for a share group, share_dlq.go) waits for a barrier first.
//
// The barrier is a ReadIndex of the controller group issued after the
// callback was registered: the leader's commit index, confirmed by a
// quorum, as of after the request left. Once the local metadata has
// applied that index, every change committed before the callback was
// registered is applied here. Callbacks registered while a request is in
// flight wait for the next request (the one in flight may have left before
// their cause). An unanswered request is sent again after an election
// timeout under the same id (an answer may be lost with its message).

// barrierTag tags a barrier's ReadIndex: 'B' and the request id.
const barrierTag = 'B'

// metaBarriers is the reactor's barrier state.
type metaBarriers struct {
	queued []func() // registered since the last request left
	seq    uint64
	reqs   []*barrierReq // in order of id
}

// barrierReq is one ReadIndex request and the callbacks waiting on it.
type barrierReq struct {
	id     uint64
	fns    []func()
	index  uint64 // the answer, once known
	known  bool
	sentAt time.Duration
}

// afterFreshMetadata calls fn, from the reactor, once the metadata holds
// everything the controller committed before now. fn may never be called
// if the broker stops first.
func (r *Reactor) afterFreshMetadata(fn func()) {
	r.barriers.queued = append(r.barriers.queued, fn)
	r.pumpBarriers()
}

// pumpBarriers runs the callbacks whose barrier is passed, sends the
// queued ones' request when none is unanswered, and sends overdue requests
// again. The tick calls it too.
func (r *Reactor) pumpBarriers() {
	b := &r.barriers
	applied := r.ctl.rep.Applied()
	for len(b.reqs) > 0 && b.reqs[0].known && applied >= b.reqs[0].index {
		q := b.reqs[0]
		b.reqs = b.reqs[1:]
		for _, fn := range q.fns {
			fn()
		}
	}
	if r.controllerLeader() == 0 {
		return // no one to ask: the tick tries again
	}
	now := r.monoNow()
	resend := r.cfg.TickInterval * time.Duration(r.cfg.ElectionTicks)
	unanswered := false
	for _, q := range b.reqs {
		if q.known {
			continue
		}
		unanswered = true
		if now-q.sentAt >= resend {
			r.sendBarrier(q, now)
		}
	}
	if !unanswered && len(b.queued) > 0 {
		b.seq++
		q := &barrierReq{id: b.seq, fns: b.queued}
		b.queued = nil
		b.reqs = append(b.reqs, q)
		r.sendBarrier(q, now)
	}
}

func (r *Reactor) sendBarrier(q *barrierReq, now time.Duration) {
	q.sentAt = now
	var ctx [9]byte
	ctx[0] = barrierTag
	binary.BigEndian.PutUint64(ctx[1:], q.id)
	r.ctl.rep.ReadIndex(ctx[:])
}

// observeBarriers takes the controller group's ReadIndex answers for
// barriers.
func (r *Reactor) observeBarriers(rss []consensus.ReadState) {
	b := &r.barriers
	for _, rs := range rss {
		if len(rs.RequestCtx) != 9 || rs.RequestCtx[0] != barrierTag {
			continue
		}
		id := binary.BigEndian.Uint64(rs.RequestCtx[1:])
		for _, q := range b.reqs {
			if q.id == id && !q.known {
				q.index, q.known = rs.Index, true
			}
		}
	}
	r.pumpBarriers()
}
