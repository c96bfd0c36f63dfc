package node

import (
	"errors"
	"fmt"
	"time"

	"github.com/floe-broker/floe/internal/wire"
	"github.com/floe-broker/floe/netx"
)

// Duplicate broker ids.
//
// Every broker process draws a random incarnation id at Start (from
// Env.Rand: random in production, the seeded generator in the simulator),
// registers it with its broker record and sends it with every join request.
// A join under an id the metadata holds with another incarnation is one of
// two things: a replacement (the old process is gone, its disk perhaps
// lost: docs/operations.md), or a second live process started with a taken
// id by mistake. The controller leader tells them apart as Kafka does
// (DUPLICATE_BROKER_REGISTRATION): by whether it still hears from the
// registered one. While it does, the join is refused before anything
// changes (no peer address, no learner, no registration), and the joining
// broker logs the refusal and, if refused for joinRefusedExitTicks, exits.
// Once the registered one has been silent for dupLiveTicks, the join is
// admitted as before.

// dupState is the controller leader's view of which members it hears from.
type dupState struct {
	term  uint64            // the controller term the view is for
	since uint64            // the tick this node saw itself lead that term
	heard map[uint64]uint64 // per controller member, the last tick its progress was recently active
}

// dupLiveTicks is how long after the controller leader last heard from a
// broker it still takes it for live: twice the election timeout, as
// check-quorum clears the recently-active marks once per election timeout.
func (r *Reactor) dupLiveTicks() uint64 { return uint64(2 * r.cfg.ElectionTicks) }

// joinRefusedExitTicks is how long a joining broker keeps asking while
// refused before it gives up: long enough for a restarted broker whose old
// process just died to be admitted once the leader stops hearing from it.
func (r *Reactor) joinRefusedExitTicks() uint64 { return 3 * r.dupLiveTicks() }

// noteControllerHeard records, on the controller leader, which members it
// heard from this tick.
func (r *Reactor) noteControllerHeard() {
	d := &r.dup
	if r.controllerLeader() != r.self {
		d.heard = nil
		return
	}
	if d.heard == nil || d.term != r.ctl.term {
		d.term, d.since, d.heard = r.ctl.term, r.ticks, map[uint64]uint64{}
	}
	for _, pr := range r.ctl.rep.Status().Progress {
		if pr.RecentActive && pr.ID != r.self {
			d.heard[pr.ID] = r.ticks
		}
	}
}

// joinRefusal says why the controller leader refuses a join of broker id
// from incarnation inc, or nil to admit it.
func (r *Reactor) joinRefusal(id, inc uint64) error {
	b, ok := r.ctl.state.Brokers[int32(id)]
	if !ok || b.Incarnation == 0 || inc == 0 || b.Incarnation == inc {
		return nil // new, from before incarnations, or the registered process itself
	}
	d, window := &r.dup, r.dupLiveTicks()
	tick := r.cfg.TickInterval
	if t, heard := d.heard[id]; heard && r.ticks-t <= window {
		ago := time.Duration(r.ticks-t) * tick
		return fmt.Errorf("broker id %d is registered by a live broker at %s (last heard %v ago); "+
			"stop it first, or wait until the controller has not heard from it for %v, or pick another id",
			id, b.RaftAddr, ago, time.Duration(window)*tick)
	}
	if d.heard == nil || r.ticks-d.since < window {
		// This leader is too new to know: refuse for now, the joiner asks again.
		return fmt.Errorf("broker id %d is registered by another broker at %s that the new controller "+
			"leader cannot yet tell dead from live; stop it first, or wait %v", id, b.RaftAddr, time.Duration(window)*tick)
	}
	return nil
}

// leaderJoinRefusal, on a broker that follows controller leader lead,
// refuses a join under the leader's own id from another incarnation: the
// leader is live (this broker hears from it), and it cannot answer the
// joiner itself, as a transport refuses a connection from its own id.
func (r *Reactor) leaderJoinRefusal(id, inc, lead uint64) error {
	b, ok := r.ctl.state.Brokers[int32(id)]
	if id != lead || !ok || b.Incarnation == 0 || inc == 0 || b.Incarnation == inc {
		return nil
	}
	return fmt.Errorf("broker id %d is registered by a live broker at %s (it is the controller leader "+
		"broker %d follows); stop it first, or pick another id", id, b.RaftAddr, r.self)
}

// refuseJoin tells the joining broker at addr why it is refused. It is
// addressed as Anyone: the broker id is the live broker's, whose address
// must not change. It is told every peer too, as an admitted one is: a
// restarted broker on an empty disk at the registered address may be the
// one this leader hears from (it answers the heartbeats sent there), and
// it needs this leader's address to answer and register its incarnation.
func (r *Reactor) refuseJoin(addr string, err error) {
	r.env.Logf("node %d: join refused: %v", r.self, err)
	r.setPeer(netx.Anyone, addr)
	r.sendPeers(netx.Anyone)
	var w wire.Writer
	w.U8(frameRPC)
	w.U8(rpcJoinRefused)
	w.String(err.Error())
	r.env.Net.Send(netx.Anyone, w.B)
}

// joinRefused handles the controller leader's refusal of this broker's
// join: logged at once, fatal once refused for joinRefusedExitTicks.
func (r *Reactor) joinRefused(msg string) {
	if r.controllerLeader() != 0 {
		return // admitted since (a late refusal from a deposed leader)
	}
	rs := &r.reports
	now := r.ticks + 1 // never zero: zero means "not refused yet"
	if rs.refusedTick == 0 {
		rs.refusedTick = now
	}
	r.env.Logf("node %d: join refused by the controller: %s", r.self, msg)
	if now-rs.refusedTick >= r.joinRefusedExitTicks() {
		r.fatal(errors.New("join refused: " + msg))
	}
}
