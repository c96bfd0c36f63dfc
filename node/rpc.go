package node

import (
	"slices"

	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/internal/wire"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/controller"
)

// Node RPCs ride beside Raft frames (frameRPC). They are fire and forget,
// like Raft messages: the sender retries on its tick until it sees the
// effect in the controller log.
const (
	rpcForward = 1 // a controller command for the controller leader to propose
	rpcJoin    = 2 // a new broker asks to become a controller learner
	rpcPeers   = 3 // the controller leader tells a joining broker every peer address
	// rpcJoinRefused: the controller leader refuses a join (a broker id
	// registered by another live process, dupid.go).
	rpcJoinRefused = 4
)

// joinPeer is the transport id under which a joining broker addresses the
// running broker it was told about (whose id it does not know yet).
const joinPeer = netx.Anyone

// forward is a controller command this node asked for and waits to see
// applied.
type forward struct {
	cmd      *controller.Command
	done     func(controller.Result)
	deadline time.Duration
	lastSent time.Duration
}

// forwarder holds the controller commands this node asked for and waits
// to see applied, by request id. A request id is unique across restarts:
// the node id, a random nonce drawn at the first request, and a sequence.
type forwarder struct {
	pending map[string]*forward
	seq     uint64
	nonce   uint64
}

// forwardResend is how long a forward waits before being sent again (the
// leader may have changed, or the message may have been lost).
const forwardResend = time.Second

// propose asks the controller to apply cmd and calls done with the result
// once this node applies it, or with REQUEST_TIMED_OUT.
func (r *Reactor) propose(cmd *controller.Command, done func(controller.Result)) {
	fw := &r.forwards
	fw.seq++
	if fw.seq == 1 {
		fw.nonce = r.env.Rand.Uint64()
	}
	cmd.ReqID = fmt.Sprintf("%d.%x.%d", r.self, fw.nonce, fw.seq)
	now := r.env.Clock.Monotonic()
	f := &forward{cmd: cmd, done: done, deadline: now + r.cfg.ForwardTimeout}
	fw.pending[cmd.ReqID] = f
	r.sendForward(f, now)
}

func (r *Reactor) sendForward(f *forward, now time.Duration) {
	f.lastSent = now
	lead := r.controllerLeader()
	switch {
	case lead == 0:
		// Nobody to ask yet; the tick retries.
	case lead == r.self:
		r.proposeLocal(f.cmd)
	default:
		var w wire.Writer
		w.U8(frameRPC)
		w.U8(rpcForward)
		w.Bytes(f.cmd.Encode())
		r.env.Net.Send(netx.NodeID(lead), w.B)
	}
}

// proposeLocal proposes a command on this node, the controller leader.
func (r *Reactor) proposeLocal(cmd *controller.Command) {
	if _, _, err := r.ctl.rep.Propose(EntryCommand, cmd.Encode()); err != nil {
		r.env.Logf("node %d: controller propose: %v", r.self, err)
	}
	r.queueProcess()
}

// resolveForward is called when the controller log applies a command with a
// request id; only the node that asked has a waiter.
func (r *Reactor) resolveForward(reqID string, res controller.Result) {
	f, ok := r.forwards.pending[reqID]
	if !ok {
		return
	}
	delete(r.forwards.pending, reqID)
	if f.done != nil {
		f.done(res)
	}
}

// retryForwards resends forwards that have waited long enough and fails
// those past their deadline.
func (r *Reactor) retryForwards() {
	now := r.env.Clock.Monotonic()
	for _, id := range sortedKeys(r.forwards.pending) {
		f := r.forwards.pending[id]
		switch {
		case now >= f.deadline || r.buggify(bugForwardTimeout):
			delete(r.forwards.pending, id)
			if f.done != nil {
				f.done(controller.Result{Err: kerr.RequestTimedOut})
			}
		case now-f.lastSent >= forwardResend:
			r.sendForward(f, now)
		}
	}
}

func (r *Reactor) handleRPC(from uint64, b []byte) {
	rd := wire.Reader{B: b}
	switch kind := rd.U8(); kind {
	case rpcForward:
		data := rd.Bytes()
		if rd.Done() != nil || r.controllerLeader() != r.self {
			return
		}
		cmd, err := controller.DecodeCommand(data)
		if err != nil {
			r.stats.BadFrames++
			return
		}
		r.proposeLocal(cmd)
	case rpcJoin:
		id := rd.Uvarint()
		addr := rd.String()
		var inc uint64
		if len(rd.B) > 0 {
			inc = rd.Uvarint() // absent from a broker from before incarnations
		}
		if rd.Done() != nil || id == 0 {
			return
		}
		r.admit(id, addr, inc)
	case rpcJoinRefused:
		msg := rd.String()
		if rd.Done() != nil {
			return
		}
		r.joinRefused(msg)
	case rpcPeers:
		n := rd.Count(2)
		for i := 0; i < n && rd.Err() == nil; i++ {
			id, addr := rd.Uvarint(), rd.String()
			if id != 0 && id != r.self && addr != "" {
				r.setPeer(netx.NodeID(id), addr)
			}
		}
	case rpcVoterChange, rpcVoterAnswer:
		r.handleVoterRPC(from, kind, &rd)
	case rpcAuditAppend, rpcAuditAck:
		r.handleAuditRPC(from, kind, &rd)
	case rpcTxnMarker, rpcTxnMarkerAck:
		r.handleTxnRPC(from, kind, &rd)
	case rpcTxnVerify, rpcTxnVerifyAck:
		r.handleTxnVerifyRPC(from, kind, &rd)
	case rpcShareForward, rpcShareForwardAck:
		r.handleShareRPC(from, kind, &rd)
	case rpcShareRead, rpcShareReadAck:
		r.handleShareReadRPC(from, kind, &rd)
	case rpcShareDLQAppend, rpcShareDLQAck:
		r.handleShareDLQRPC(from, kind, &rd)
	case rpcElectPreferred:
		r.handleElectRPC(&rd)
	default:
		r.stats.BadFrames++
	}
}

// admit adds a broker to the controller group as a learner, so it receives
// and applies the metadata log; non-leaders pass the request on.
func (r *Reactor) admit(id uint64, addr string, inc uint64) {
	if id == r.self {
		r.refuseSelfJoin(addr, inc)
		return
	}
	lead := r.controllerLeader()
	if lead == 0 {
		return
	}
	if lead != r.self {
		if err := r.leaderJoinRefusal(id, inc, lead); err != nil {
			r.refuseJoin(addr, err) // the leader cannot: its transport refuses to talk to its own id
			return
		}
		r.sendJoin(netx.NodeID(lead), id, addr, inc)
		return
	}
	if err := r.joinRefusal(id, inc); err != nil {
		// Before setPeer: the live broker keeps its address.
		r.refuseJoin(addr, err)
		return
	}
	r.setPeer(netx.NodeID(id), addr)
	// The newcomer knows one address, and must answer the leader before it
	// can apply the metadata that holds the others: tell it every peer.
	r.sendPeers(netx.NodeID(id))
	if slices.Contains(r.ctl.rep.Conf().Voters, id) || slices.Contains(r.ctl.rep.Conf().Learners, id) {
		return
	}
	cc := consensus.ConfChange{Type: consensus.ConfAddLearner, NodeID: id, Context: []byte(addr)}
	if _, _, err := r.ctl.rep.ProposeConfChange(cc); err != nil {
		r.env.Logf("node %d: admit %d: %v", r.self, id, err)
	}
	r.queueProcess()
}

func (r *Reactor) sendPeers(to netx.NodeID) {
	type peer struct {
		id   uint64
		addr string
	}
	peers := []peer{{r.self, r.cfg.RaftAddr}}
	for _, p := range r.cfg.Peers {
		if uint64(p.ID) != r.self {
			peers = append(peers, peer{uint64(p.ID), p.RaftAddr})
		}
	}
	st := r.ctl.state
	for _, id := range st.BrokerIDs() {
		if b := st.Brokers[id]; uint64(id) != r.self && b.RaftAddr != "" {
			peers = append(peers, peer{uint64(id), b.RaftAddr})
		}
	}
	var w wire.Writer
	w.U8(frameRPC)
	w.U8(rpcPeers)
	w.Uvarint(uint64(len(peers)))
	for _, p := range peers {
		w.Uvarint(p.id)
		w.String(p.addr)
	}
	r.env.Net.Send(to, w.B)
}

func (r *Reactor) sendJoin(to netx.NodeID, id uint64, addr string, inc uint64) {
	var w wire.Writer
	w.U8(frameRPC)
	w.U8(rpcJoin)
	w.Uvarint(id)
	w.String(addr)
	w.Uvarint(inc)
	r.env.Net.Send(to, w.B)
}
