package node

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/consensus"
)

// Metadata catch-up: after it starts, a broker does not know whether the
// metadata it has applied is the cluster's. Its log may lack what was
// committed while it was down, and its commit index (from its own hard
// state, then from the leader's heartbeats, which carry at most what this
// follower is known to hold) can look caught up while it is not. Until it
// knows, a topic it has not heard of may well exist, and answering
// UNKNOWN_TOPIC_OR_PARTITION makes clients give up on it (franz-go fails
// records after 4 such answers).
//
// So the broker asks the controller group for a ReadIndex: the leader's
// commit index, confirmed by a quorum, as of after this broker started.
// Once its metadata has applied that index it has seen every topic that
// existed when it asked; from then on it counts as caught up for good
// (later changes reach it like any follower's). Until then, requests for
// topics or partitions it does not know get retriable answers
// (missingPartition, Metadata's LEADER_NOT_AVAILABLE) and /readyz says no.

// catchUp is the catch-up state.
type catchUp struct {
	done   bool          // metadata caught up with the controller once
	target uint64        // the ReadIndex answer to apply, once known
	known  bool          // target is set
	sent   time.Duration // monotonic send time of the request in flight, 0 if none
	// held are the Metadata and DescribeCluster requests waiting for the
	// catch-up (below), in arrival order.
	held []heldRequest
}

// catchUpTag tags a catch-up ReadIndex: 'M' and the send time.
const catchUpTag = 'M'

// probeMetadata asks for the controller's commit index until the metadata
// has caught up with it. An answer can be lost with its message, so the
// request is repeated after an election timeout.
func (r *Reactor) probeMetadata() {
	c := &r.catchUp
	r.checkCaughtUp()
	if c.done || c.known || r.controllerLeader() == 0 {
		return
	}
	now := r.env.Clock.Monotonic()
	if c.sent != 0 && now-c.sent < r.cfg.TickInterval*time.Duration(r.cfg.ElectionTicks) {
		return
	}
	c.sent = now
	var ctx [9]byte
	ctx[0] = catchUpTag
	binary.BigEndian.PutUint64(ctx[1:], uint64(now))
	r.ctl.rep.ReadIndex(ctx[:])
}

// observeCatchUp takes the controller group's ReadIndex answers.
func (r *Reactor) observeCatchUp(rss []consensus.ReadState) {
	for _, rs := range rss {
		if len(rs.RequestCtx) != 9 || rs.RequestCtx[0] != catchUpTag || r.catchUp.done {
			continue
		}
		r.catchUp.target = max(r.catchUp.target, rs.Index)
		r.catchUp.known = true
	}
	r.checkCaughtUp()
}

// checkCaughtUp marks the metadata caught up once it applied the target.
func (r *Reactor) checkCaughtUp() {
	c := &r.catchUp
	if !c.done && c.known && r.ctl.rep.Applied() >= c.target {
		c.done = true
	}
}

// metadataReady reports whether this broker can tell which topics exist: a
// controller leader is known, this broker's registration is applied, and
// its metadata has caught up with the controller since it started. The
// reason says what is missing.
func (r *Reactor) metadataReady() (bool, string) {
	if r.stopped {
		return false, "stopped"
	}
	if r.controllerLeader() == 0 {
		return false, "no controller leader yet"
	}
	if !r.catchUp.done {
		return false, "metadata still catching up with the controller"
	}
	if _, ok := r.ctl.state.Brokers[int32(r.self)]; !ok {
		return false, "broker not registered yet"
	}
	return true, ""
}

// unopenedReplicas counts the replicas the last walk of the metadata
// placed here that are not open yet, and names the first.
func (r *Reactor) unopenedReplicas() (int, string) {
	n, first := 0, ""
	for _, u := range r.ctl.unopened {
		if _, open := r.parts[u.p.Group]; open {
			continue
		}
		if n == 0 {
			first = fmt.Sprintf("%s-%d", u.t.Name, u.p.Index)
		}
		n++
	}
	return n, first
}

// Serving reports whether the broker serves every partition it holds
// (/readyz): its metadata is ready (metadataReady), every replica the
// metadata places here is open, and every local replica knows its
// partition's leader, so no client is told
// NOT_LEADER_OR_FOLLOWER for want of an election. A partition that cannot
// elect (its quorum is down) keeps the broker unready. The reason names
// what is missing.
func (r *Reactor) Serving() (bool, string) {
	if ok, why := r.metadataReady(); !ok {
		return false, why
	}
	if n, first := r.unopenedReplicas(); n > 0 {
		// A restart opens its replicas a few at a time (openSome): until
		// the last is open, the ones open may all be led while thousands
		// wait (a 10,000-partition restart answered /readyz with some
		// 4,000 open).
		return false, fmt.Sprintf("%d local replicas not open yet (%s first)", n, first)
	}
	leaderless, first := 0, ""
	for _, g := range sortedKeys(r.parts) {
		p := r.parts[g]
		if r.doomed[g] || p.Leader() != 0 {
			continue
		}
		if leaderless == 0 {
			first = fmt.Sprintf("%s-%d", p.Topic, p.Index)
		}
		leaderless++
	}
	if leaderless > 0 {
		return false, fmt.Sprintf("%d local replicas have no known leader (%s first)", leaderless, first)
	}
	return true, ""
}

// Held cluster listings. Until it has caught up, the brokers a broker
// lists are the ones its controller replica has applied so far: right
// after a restart, the brokers registered before it went down, or only
// itself; a client that bootstraps from it (or an operator's script that
// counts the brokers) takes that partial list for the cluster. So Metadata
// and DescribeCluster wait for the catch-up, up to metadataHoldMax after
// the start (counted in the reactor's ticks): a controller without a
// quorum must not keep every client from an answer, and the request's own
// deadline (8 s, expire.go) is later. Past the bound they are answered with
// what the broker has, as before.

// metadataHoldMax bounds how long after its start a broker holds cluster
// listings for the catch-up.
const metadataHoldMax = 5 * time.Second

// heldRequest is a request served once the hold ends.
type heldRequest struct {
	c       Client
	req     kmsg.Request
	respond func(kmsg.Response)
	serve   handler
}

// holdListing holds a cluster listing (served by serve) while the
// metadata catches up; it reports whether it held the request.
func (r *Reactor) holdListing(serve handler, c Client, req kmsg.Request, respond func(kmsg.Response)) bool {
	if !r.holdingListings() {
		return false
	}
	r.catchUp.held = append(r.catchUp.held, heldRequest{c: c, req: req, respond: respond, serve: serve})
	return true
}

// holdingListings reports whether cluster listings wait: the metadata has
// not caught up, and the start was less than metadataHoldMax ago.
func (r *Reactor) holdingListings() bool {
	return !r.catchUp.done && time.Duration(r.ticks)*r.cfg.TickInterval < metadataHoldMax
}

// releaseListings serves the held listings once the hold is over.
func (r *Reactor) releaseListings() {
	if len(r.catchUp.held) == 0 || r.holdingListings() {
		return
	}
	held := r.catchUp.held
	r.catchUp.held = nil
	for _, h := range held {
		h.serve(r, h.c, h.req, h.respond)
	}
}
