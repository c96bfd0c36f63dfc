package node

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/internal/plant"
	"github.com/floe-broker/floe/internal/wire"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/controller"
)

// Controller voter changes (AddRaftVoter, RemoveRaftVoter; KIP-853 style).
//
// Any broker takes the request and sends it (rpcVoterChange) to the
// controller group's leader, which checks it against its own view of the
// group (consensus.PlanVoterChange: one change at a time, not before its
// term's first entry is applied, a caught-up live learner to promote, a
// live quorum left after a removal, never the last voter) and against the
// metadata (a voter must be a registered broker that is not being
// decommissioned). A refusal is a command in the controller log
// (controller.VoterRefusal) and changes nothing else; an accepted change is
// a membership entry in the controller log carrying the request's id. The
// asking broker answers its client when its own replica applies either, so
// an answer, yes or no, is committed, and whichever of the two entries
// comes first in the log decides on every broker. A request whose answer
// is lost is sent again each second until its deadline; the leader ignores
// a copy of a request it already proposed or is refusing, and answers a
// copy of one the log refused with that refusal (rpcVoterAnswer), whichever
// leader it reaches and however often leaders restarted in between.
//
// A removed voter becomes a learner, not a stranger: every broker applies
// the metadata log. Retiring the broker itself is `floe broker
// decommission`.

const (
	rpcVoterChange = 40 // a broker asks the controller leader for a voter change
	rpcVoterAnswer = 41 // the leader refuses it (an accepted one is answered by the log)
)

// voterCtxPrefix marks a membership entry's context as a voter change's
// request id (a learner's admission carries its address there instead).
const voterCtxPrefix = "\x00voter "

// voterReq is a voter change this broker was asked for and waits on.
type voterReq struct {
	op       consensus.VoterOp
	id       uint64
	done     func(error)
	deadline time.Duration
	lastSent time.Duration
	// sentTo are the brokers a copy went to. A refusal speaks only for
	// the broker that refused (which refuses its own copies again): with
	// copies at another one, which may still propose it, the outcome is
	// unknown.
	sentTo []uint64
}

// voterChanges holds this broker's voter requests by id, and on the
// controller leader the request ids it has proposed (against resends).
type voterChanges struct {
	pending  map[string]*voterReq
	proposed map[string]uint64 // request id -> index of its membership entry
	// applied are the request ids of the last voterAppliedKeep voter
	// changes this broker applied: a resend of one that a new leader
	// receives is answered as done, not checked again as a new change
	// (which could refuse it as a duplicate of itself).
	applied []string
	// refusing are the request ids whose refusal this broker proposed as
	// leader and has not yet applied: a copy waits for that entry (a
	// refusal applied is in the metadata, controller.VoterRefusal).
	refusing map[string]bool
	seq      uint64
}

// voterAppliedKeep is how many applied voter changes are remembered.
const voterAppliedKeep = 16

// changeVoter asks the controller for op on broker id and calls done with
// nil once the change is committed and applied here, or with the reason
// it was refused, or REQUEST_TIMED_OUT.
func (r *Reactor) changeVoter(op consensus.VoterOp, id int32, done func(error)) {
	if id <= 0 {
		done(&messageError{kerr.InvalidRequest, fmt.Sprintf("bad broker id %d", id)})
		return
	}
	vc := &r.voters
	if vc.pending == nil {
		vc.pending = map[string]*voterReq{}
	}
	vc.seq++
	if r.forwards.nonce == 0 {
		r.forwards.nonce = r.env.Rand.Uint64()
	}
	reqID := fmt.Sprintf("v%d.%x.%d", r.self, r.forwards.nonce, vc.seq)
	now := r.env.Clock.Monotonic()
	req := &voterReq{op: op, id: uint64(id), done: done, deadline: now + r.cfg.ForwardTimeout}
	vc.pending[reqID] = req
	r.sendVoterChange(reqID, req, now)
}

func (r *Reactor) sendVoterChange(reqID string, req *voterReq, now time.Duration) {
	req.lastSent = now
	switch lead := r.controllerLeader(); lead {
	case 0:
		// Nobody to ask yet; the tick retries.
	case r.self:
		req.copyTo(r.self)
		r.planVoterChange(r.self, reqID, req.op, req.id)
	default:
		req.copyTo(lead)
		var w wire.Writer
		w.U8(frameRPC)
		w.U8(rpcVoterChange)
		w.String(reqID)
		w.U8(uint8(req.op))
		w.Uvarint(req.id)
		r.env.Net.Send(netx.NodeID(lead), w.B)
	}
}

// retryVoterChanges resends voter requests that waited a second and fails
// those past their deadline (their outcome is then unknown to the client).
func (r *Reactor) retryVoterChanges() {
	if r.controllerLeader() != r.self {
		clear(r.voters.proposed) // entries a leader proposes; resends go to the new one
		clear(r.voters.refusing)
	}
	now := r.env.Clock.Monotonic()
	for _, reqID := range sortedKeys(r.voters.pending) {
		req := r.voters.pending[reqID]
		switch {
		case now >= req.deadline:
			delete(r.voters.pending, reqID)
			req.done(kerr.RequestTimedOut)
		case now-req.lastSent >= forwardResend:
			r.sendVoterChange(reqID, req, now)
		}
	}
}

func (r *Reactor) handleVoterRPC(from uint64, kind uint8, rd *wire.Reader) {
	reqID := rd.String()
	switch kind {
	case rpcVoterChange:
		op := consensus.VoterOp(rd.U8())
		id := rd.Uvarint()
		if rd.Done() != nil {
			r.stats.BadFrames++
			return
		}
		r.planVoterChange(from, reqID, op, id)
	case rpcVoterAnswer:
		code := int16(rd.Uvarint())
		msg := rd.String()
		if rd.Done() != nil {
			r.stats.BadFrames++
			return
		}
		r.resolveVoterChange(reqID, answerError(code, msg))
	}
}

// planVoterChange runs on the controller leader: it proposes the change or
// tells the asking broker why not.
func (r *Reactor) planVoterChange(from uint64, reqID string, op consensus.VoterOp, id uint64) {
	if r.controllerLeader() != r.self {
		return // the asker resends to the leader it learns of
	}
	vc := &r.voters
	if vc.proposed == nil {
		vc.proposed, vc.refusing = map[string]uint64{}, map[string]bool{}
	}
	if _, ok := vc.proposed[reqID]; ok || vc.refusing[reqID] {
		return // a resend of a change or refusal in the log: its entry answers it
	}
	if slices.Contains(vc.applied, reqID) {
		r.answerVoterChange(from, reqID, nil) // done before the answer was lost
		return
	}
	if v, ok := r.ctl.state.VoterRefusal(reqID); ok {
		r.answerVoterChange(from, reqID, answerError(v.Code, v.Msg)) // refused once: refused for good
		return
	}
	cc, err := r.checkVoterChange(op, id)
	if err == nil {
		cc.Context = []byte(voterCtxPrefix + reqID)
		var index uint64
		if index, _, err = r.ctl.rep.ProposeConfChange(cc); err == nil {
			vc.proposed[reqID] = index
			r.env.Logf("node %d: controller %s %d proposed at %d", r.self, op, id, index)
			r.queueProcess()
			early := plant.Enabled(plant.VoterAckBeforeCommit)
			if early {
				r.answerVoterChange(from, reqID, nil) // planted bug: answer success before the entry commits
			}
			return
		}
	}
	r.proposeVoterRefusal(reqID, err)
}

// proposeVoterRefusal writes the refusal of request reqID into the
// controller log; the asking broker answers its client when it applies it.
func (r *Reactor) proposeVoterRefusal(reqID string, err error) {
	code, msg := errParts(err)
	v := &controller.VoterRefusal{ReqID: reqID, Code: code}
	if msg != nil {
		v.Msg = *msg
	}
	if _, _, perr := r.ctl.rep.Propose(EntryCommand, (&controller.Command{RefuseVoterChange: v}).Encode()); perr != nil {
		r.env.Logf("node %d: controller voter refusal of %s: %v", r.self, reqID, perr)
		return // the asker resends, and is refused again
	}
	r.voters.refusing[reqID] = true
	r.env.Logf("node %d: controller voter change %s refused: %v", r.self, reqID, err)
	r.queueProcess()
}

// appliedVoterRefusal answers the refused request v, if it was asked here.
func (r *Reactor) appliedVoterRefusal(v *controller.VoterRefusal) {
	delete(r.voters.refusing, v.ReqID)
	r.resolveVoterChange(v.ReqID, answerError(v.Code, v.Msg))
}

// checkVoterChange checks op against the metadata, then against Raft.
func (r *Reactor) checkVoterChange(op consensus.VoterOp, id uint64) (consensus.ConfChange, error) {
	if op != consensus.VoterAdd && op != consensus.VoterRemove {
		return consensus.ConfChange{}, &messageError{kerr.InvalidRequest, fmt.Sprintf("unknown voter change %d", op)}
	}
	if op == consensus.VoterAdd {
		b, ok := r.ctl.state.Brokers[int32(id)]
		switch {
		case !ok:
			return consensus.ConfChange{}, &messageError{kerr.BrokerNotAvailable, fmt.Sprintf("broker %d is not registered", id)}
		case b.Decommissioned:
			return consensus.ConfChange{}, &messageError{kerr.InvalidRequest, fmt.Sprintf("broker %d is being decommissioned", id)}
		}
	}
	cc, err := consensus.PlanVoterChange(r.ctl.rep.Status(), op, id)
	if err != nil {
		return cc, voterError(op, id, err)
	}
	return cc, nil
}

// voterError maps a consensus refusal to the Kafka error KIP-853 names.
func voterError(op consensus.VoterOp, id uint64, err error) error {
	code := kerr.InvalidRequest
	switch err {
	case consensus.ErrAlreadyVoter:
		code = kerr.DuplicateVoter
	case consensus.ErrNotVoter:
		code = kerr.VoterNotFound
	case consensus.ErrConfChangePending, consensus.ErrNotCaughtUp, consensus.ErrBreaksQuorum:
		code = kerr.RequestTimedOut // retriable: it may be allowed later
	case consensus.ErrNotLeader:
		code = kerr.NotController
	}
	return &messageError{code, fmt.Sprintf("%s %d: %s", op, id, strings.TrimPrefix(err.Error(), "consensus: "))}
}

func (r *Reactor) answerVoterChange(to uint64, reqID string, err error) {
	if to == r.self {
		r.resolveVoterChange(reqID, err)
		return
	}
	code, msg := int16(0), ""
	if err != nil {
		c, m := errParts(err)
		code = c
		if m != nil {
			msg = *m
		}
	}
	var w wire.Writer
	w.U8(frameRPC)
	w.U8(rpcVoterAnswer)
	w.String(reqID)
	w.Uvarint(uint64(uint16(code)))
	w.String(msg)
	r.env.Net.Send(netx.NodeID(to), w.B)
}

// answerError is the error an rpcVoterAnswer carries: nil for code 0.
func answerError(code int16, msg string) error {
	if code == 0 {
		return nil
	}
	ke, ok := kerr.ErrorForCode(code).(*kerr.Error)
	if !ok {
		ke = kerr.UnknownServerError
	}
	return &messageError{ke, msg}
}

func (r *Reactor) resolveVoterChange(reqID string, err error) {
	req, ok := r.voters.pending[reqID]
	if !ok {
		return
	}
	delete(r.voters.pending, reqID)
	if err != nil && len(req.sentTo) > 1 {
		err = kerr.RequestTimedOut // another broker's copy may still be proposed
	}
	req.done(err)
}

func (req *voterReq) copyTo(id uint64) {
	if !slices.Contains(req.sentTo, id) {
		req.sentTo = append(req.sentTo, id)
	}
}

// appliedVoterChange is called for every applied membership entry of the
// controller: a voter change answers the request it carries, if it was
// asked here.
func (r *Reactor) appliedVoterChange(cc consensus.ConfChange) bool {
	ctx := string(cc.Context)
	if !strings.HasPrefix(ctx, voterCtxPrefix) {
		return false
	}
	reqID := strings.TrimPrefix(ctx, voterCtxPrefix)
	delete(r.voters.proposed, reqID)
	vc := &r.voters
	vc.applied = append(vc.applied, reqID)
	if len(vc.applied) > voterAppliedKeep {
		vc.applied = vc.applied[1:]
	}
	r.resolveVoterChange(reqID, nil)
	return true
}

// controllerVoters is the controller group's membership as this broker
// has applied it: voters and learners, sorted.
func (r *Reactor) controllerVoters() (voters, learners []uint64) {
	cs := r.ctl.rep.Conf()
	return slices.Clone(cs.Voters), slices.Clone(cs.Learners)
}

// ControllerQuorum is this broker's view of the controller group, for the
// simulator's checks: the leader it knows, its applied index, and the
// membership it has applied.
type ControllerQuorum struct {
	Leader, Applied  uint64
	Voters, Learners []uint64
}

// ControllerQuorum returns this broker's view of the controller group.
func (r *Reactor) ControllerQuorum() ControllerQuorum {
	v, l := r.controllerVoters()
	return ControllerQuorum{Leader: r.controllerLeader(), Applied: r.ctl.rep.Applied(), Voters: v, Learners: l}
}

// DescribeController describes this broker's controller replica in one
// line, for a failing simulator run's trace: its Raft state, the
// membership it has applied, its vote fence and, on the leader, each
// member's progress.
func (r *Reactor) DescribeController() string {
	st := r.ctl.rep.Status()
	line := fmt.Sprintf("n%d controller: %v term=%d vote=%d lead=%d commit=%d applied=%d last=%d conf=%v learners=%v fence=%v damaged=%v",
		r.self, st.RaftState, st.Term, st.Vote, st.Lead, st.Commit, st.Applied, st.LastIndex,
		st.Config.Voters, st.Config.Learners, r.ctl.rep.VoteFence(), r.ctl.rep.Damaged())
	for _, pr := range st.Progress {
		line += fmt.Sprintf(" p%d:match=%d,next=%d,active=%v", pr.ID, pr.Match, pr.Next, pr.RecentActive)
	}
	return line
}
