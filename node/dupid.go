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

// dupState notes since when this node has led the controller term it
// leads: a new leader does not yet know whom it hears from.
type dupState struct {
	term  uint64 // the controller term the note is for
	since uint64 // the tick this node saw itself lead that term
	led   bool   // this node led the controller at its last tick
}

// dupLiveTicks is how long after the controller leader last heard from a
// broker it still takes it for live: twice the election timeout, many
// heartbeat rounds, so a few lost answers never make a live broker dead.
func (r *Reactor) dupLiveTicks() uint64 { return uint64(2 * r.cfg.ElectionTicks) }

// joinRefusedExitTicks is how long a joining broker keeps asking while
// refused before it gives up: long enough for a restarted broker whose old
// process just died to be admitted once the leader stops hearing from it.
func (r *Reactor) joinRefusedExitTicks() uint64 { return 3 * r.dupLiveTicks() }

// noteControllerHeard notes, on the controller leader, the tick its
// leadership of this term began. Whom it hears from is the controller
// group's own note (consensus's PeerProgress.HeardTicksAgo), asked for
// only when a join needs it.
func (r *Reactor) noteControllerHeard() {
	d := &r.dup
	if r.controllerLeader() != r.self {
		d.led = false
		return
	}
	if !d.led || d.term != r.ctl.term {
		d.term, d.since, d.led = r.ctl.term, r.ticks, true
	}
}

// heardTicksAgo is how many ticks ago the controller leader last heard
// from member id in this leadership, or -1 if not at all.
func (r *Reactor) heardTicksAgo(id uint64) int64 {
	for _, pr := range r.ctl.rep.Status().Progress {
		if pr.ID == id {
			return pr.HeardTicksAgo
		}
	}
	return -1
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
	if ago := r.heardTicksAgo(id); ago >= 0 && uint64(ago) <= window {
		ago := time.Duration(ago) * tick
		return fmt.Errorf("broker id %d is registered by a live broker at %s (last heard %v ago); "+
			"stop it first, or wait until the controller has not heard from it for %v, or pick another id",
			id, b.RaftAddr, ago, time.Duration(window)*tick)
	}
	if !d.led || r.ticks-d.since < window {
		// This leader is too new to know: refuse for now, the joiner asks again.
		return fmt.Errorf("broker id %d is registered by another broker at %s that the new controller "+
			"leader cannot yet tell dead from live; stop it first, or wait %v", id, b.RaftAddr, time.Duration(window)*tick)
	}
	return nil
}

// leaderJoinRefusal, on a broker that follows controller leader lead,
// refuses a join under the leader's own id from another incarnation while
// the leader is live, that is while this broker heard from it within
// dupLiveTicks: it cannot answer the joiner itself, as a transport refuses
// a connection from its own id. A follower keeps its leader until it hears
// of a later term (a learner never campaigns), so a leader it no longer
// hears from may be gone: the joiner may be that very broker restarted,
// waiting for its group to elect a leader (seed 3500093: a learner refused
// the restarted controller leader's joins until it exited). Such a join is
// passed on to lead as any other; a live process under that id refuses
// it there (refuseSelfJoin), the restarted one drops its own.
func (r *Reactor) leaderJoinRefusal(id, inc, lead uint64) error {
	b, ok := r.ctl.state.Brokers[int32(id)]
	if id != lead || !ok || b.Incarnation == 0 || inc == 0 || b.Incarnation == inc {
		return nil
	}
	if ago := r.ctl.rep.LeadHeardTicksAgo(); ago < 0 || uint64(ago) > r.dupLiveTicks() {
		return nil // not heard from lately: not known live
	}
	return fmt.Errorf("broker id %d is registered by a live broker at %s (it is the controller leader "+
		"broker %d follows); stop it first, or pick another id", id, b.RaftAddr, r.self)
}

// fromDuplicateOK says whether frame, from a process that shares this
// broker's id and reached it by address (netx.Anyone as a sender), is one
// this broker takes from it: its join, and the refusal a broker running
// under this id is sent back when it joins (it is the duplicate then).
// Nothing else: such a process is no member.
func fromDuplicateOK(frame []byte) bool {
	if len(frame) < 2 || frame[0] != frameRPC {
		return false
	}
	switch frame[1] {
	case rpcJoin, rpcJoinRefused:
		return true
	}
	return false
}

// refuseSelfJoin answers a join under this broker's own id, which a
// process started with this id and a --join naming this broker sends: this
// broker is live (it is answering), so the join is refused, whether or not
// this broker leads the controller or has a leader at all. No peers are
// sent: the joiner cannot be this broker restarted (this broker holds its
// address). A join from this very process (a --join naming its own
// address) or from a broker from before incarnations is dropped.
func (r *Reactor) refuseSelfJoin(addr string, inc uint64) {
	if inc == 0 || inc == r.incarnation {
		return
	}
	err := fmt.Errorf("broker id %d is registered by a live broker at %s (the broker --join names); "+
		"stop it first, or pick another id", r.self, r.cfg.RaftAddr)
	r.env.Logf("node %d: join refused: %v", r.self, err)
	r.sendJoinRefused(addr, err)
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
	r.sendJoinRefused(addr, err)
}

// sendJoinRefused sends the refusal err to the joining broker at addr.
func (r *Reactor) sendJoinRefused(addr string, err error) {
	r.setPeer(netx.Anyone, addr)
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
