package node

// Forwarding share requests to the group's coordinator (issue 18).
//
// Kafka's clients send ShareFetch and ShareAcknowledge to each partition's
// leader; Floe keeps a share group's state with its coordinator
// (shares.go). A broker that gets one of these requests for a group it
// does not coordinate passes it, as Kafka bytes with the client's
// principal, to the coordinator over the peer network (rpcShareForward),
// and relays the answer (rpcShareForwardAck). The coordinator serves it on
// a session of its own for that broker (sessionKey.via), reading records
// from its own replica of each partition, or from the partition's leader
// when it holds none (share_read.go), so the client
// sees the same answer it would get from a Kafka partition leader.
//
// The peer network may duplicate or reorder frames: the coordinator serves
// each forward once (by sender, the sender's per-incarnation nonce and the
// forward's id; a duplicate is dropped unanswered, or a request whose
// acknowledgements were applied could be answered with the duplicate's
// session error), and the sender matches answers by nonce and id.
//
// A forwarded request is never forwarded again: a coordinator that lost
// the group answers NOT_COORDINATOR, and the client looks again. A
// forward unanswered within shareForwardTimeout (the coordinator died, or
// the message was lost) is answered REQUEST_TIMED_OUT with nothing known
// to have changed: as for any lost answer, clients redo the fetch, and
// acknowledgements of records whose locks lapse are refused later.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/internal/wire"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/group"
)

const (
	rpcShareForward    = 14 // a partition leader's share request for the group's coordinator
	rpcShareForwardAck = 15 // the coordinator's answer to it

	// shareForwardTimeout bounds a forward: past ShareFetch's longest wait.
	shareForwardTimeout = shareFetchMaxWait + 5*time.Second
)

// shareForwards are the forwarded share requests awaiting an answer.
type shareForwards struct {
	calls rpcCalls[shareForwardCall] // rpc_calls.go
	// served are the forwards this broker served as coordinator, with
	// when, to drop duplicates.
	served map[forwardKey]time.Duration
}

type forwardKey struct{ from, nonce, id uint64 }

// servedBefore reports whether a forward was served already, recording it
// if not; entries older than twice the forward timeout are forgotten.
func (fw *shareForwards) servedBefore(k forwardKey, now time.Duration) bool {
	if fw.served == nil {
		fw.served = map[forwardKey]time.Duration{}
	}
	if _, ok := fw.served[k]; ok {
		return true
	}
	if len(fw.served) >= 1024 {
		for old, at := range fw.served { //floe:unordered deleting stale entries; order is invisible
			if now-at > 2*shareForwardTimeout {
				delete(fw.served, old)
			}
		}
	}
	fw.served[k] = now
	return false
}

type shareForwardCall struct {
	req     kmsg.Request
	respond func(kmsg.Response)
}

// forwardShare passes req to the coordinator of groupName when this broker
// is not it and another broker is; it reports whether it did.
func (r *Reactor) forwardShare(c Client, groupName string, req kmsg.Request, respond func(kmsg.Response)) bool {
	if _, err := r.shareShardFor(groupName); err == nil || err != kerr.NotCoordinator {
		return false
	}
	t := r.offsetsTopic()
	if t == nil || len(t.Partitions) == 0 {
		return false
	}
	lead, _ := r.partitionLeader(&t.Partitions[group.PartitionFor(groupName, int32(len(t.Partitions)))])
	if lead <= 0 || uint64(lead) == r.self {
		return false
	}
	call := shareForwardCall{req: req, respond: respond}
	nonce, id := r.shares.forwards.calls.register(r, call, shareForwardTimeout,
		func(call shareForwardCall) { call.answered(nil) })
	var w wire.Writer
	w.U8(frameRPC)
	w.U8(rpcShareForward)
	w.Uvarint(nonce)
	w.Uvarint(id)
	w.String(c.ClientID)
	w.String(c.Principal)
	w.String(c.Listener)
	w.String(c.Remote)
	w.U16(uint16(req.Key()))
	w.U16(uint16(req.GetVersion()))
	w.Bytes(req.AppendTo(nil))
	r.env.Net.Send(netx.NodeID(lead), w.B)
	return true
}

// answered relays a forward's answer (nil: none came).
func (call shareForwardCall) answered(body []byte) {
	resp := call.req.ResponseKind()
	resp.SetVersion(call.req.GetVersion())
	if body == nil || resp.ReadFrom(body) != nil {
		resp = call.req.ResponseKind()
		resp.SetVersion(call.req.GetVersion())
		switch q := resp.(type) {
		case *kmsg.ShareFetchResponse:
			q.ErrorCode = kerr.RequestTimedOut.Code
		case *kmsg.ShareAcknowledgeResponse:
			q.ErrorCode = kerr.RequestTimedOut.Code
		}
	}
	call.respond(resp)
}

// handleShareRPC handles the forwarding RPCs (the reader is past the kind).
func (r *Reactor) handleShareRPC(from uint64, kind uint8, rd *wire.Reader) {
	switch kind {
	case rpcShareForward:
		nonce, id := rd.Uvarint(), rd.Uvarint()
		c := Client{ClientID: rd.String(), Principal: rd.String(), Listener: rd.String(), Remote: rd.String()}
		key, version, body := int16(rd.U16()), int16(rd.U16()), rd.Bytes()
		if rd.Done() != nil {
			r.stats.BadFrames++
			return
		}
		if r.shares.forwards.servedBefore(forwardKey{from, nonce, id}, r.monoNow()) {
			return // a duplicate frame: the first copy answers
		}
		answer := func(resp kmsg.Response) {
			var w wire.Writer
			w.U8(frameRPC)
			w.U8(rpcShareForwardAck)
			w.Uvarint(nonce)
			w.Uvarint(id)
			w.Bytes(resp.AppendTo(nil))
			r.env.Net.Send(netx.NodeID(from), w.B)
		}
		req := kmsg.RequestForKey(key)
		if req == nil {
			r.stats.BadFrames++
			return
		}
		req.SetVersion(version)
		if err := req.ReadFrom(body); err != nil {
			r.stats.BadFrames++
			return
		}
		switch q := req.(type) {
		case *kmsg.ShareFetchRequest:
			serveShareFetchVia(r, c, q, from, answer)
		case *kmsg.ShareAcknowledgeRequest:
			serveShareAcknowledgeVia(r, c, q, from, answer)
		default:
			r.stats.BadFrames++
		}
	case rpcShareForwardAck:
		nonce, id, body := rd.Uvarint(), rd.Uvarint(), rd.Bytes()
		if rd.Done() != nil {
			r.stats.BadFrames++
			return
		}
		if call, ok := r.shares.forwards.calls.take(r, nonce, id); ok {
			call.answered(body)
		} // else an answer to an earlier incarnation, a duplicate or a late one
	}
}
