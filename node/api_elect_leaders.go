package node

// ElectLeaders (key 43), versions 0-2 (KIP-183; v1 election type, KIP-460).
//
// A preferred election (type 0) moves each named partition's leadership
// (every partition's when the list is null) to its preferred replica, the
// first of its replica list, as Kafka's kafka-leader-election does. Floe's
// partitions are Raft groups, so the move is a Raft leadership transfer:
// this broker asks the partition's current leader (rpcElectPreferred;
// itself when it leads), which hands leadership to the preferred replica
// when that replica is a live voter (Raft catches it up first if it
// lags). The answer waits until this broker sees the preferred replica
// lead, or until TimeoutMillis passes (REQUEST_TIMED_OUT for the
// partitions not moved by then; the ask is resent every
// electResend meanwhile, as it may be lost). A partition its preferred
// replica already leads is ELECTION_NOT_NEEDED; one whose preferred
// replica is decommissioned, not a registered broker, or whose partition
// has no leader now is PREFERRED_LEADER_NOT_AVAILABLE. Leaders also move
// to their preferred replicas on their own (reassign.go balanceLeaders):
// this asks for it now.
//
// An unclean election (type 1) is never needed and never done: Raft
// elects only a replica holding every committed record, so a partition
// with a leader is ELECTION_NOT_NEEDED and one without is
// ELIGIBLE_LEADERS_NOT_AVAILABLE, with a message saying why.
//
// Authorization: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED
// (for every partition named, and v1+ at the top).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/internal/wire"
	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/controller"
)

// rpcElectPreferred asks a partition's leader to hand leadership to the
// partition's preferred replica (group, preferred replica id).
const rpcElectPreferred = 50

// electResend is how long an ElectLeaders waits before asking the
// partition's leader again.
const electResend = time.Second

// election is one partition of an ElectLeaders request still waiting.
type election struct {
	topic    string
	part     int32
	group    uint64
	pref     int32
	lastSent time.Duration
	done     bool
}

func serveElectLeaders(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	answers := map[topicPartition]*kmsg.ElectLeadersResponseTopicPartition{}
	var order []topicPartition
	answer := func(tp topicPartition, err error) {
		a := answers[tp]
		if a == nil {
			na := kmsg.NewElectLeadersResponseTopicPartition()
			na.Partition, a = tp.partition, &na
			answers[tp] = a
			order = append(order, tp)
		}
		a.ErrorCode, a.ErrorMessage = errParts(err)
	}
	finish := func() {
		resp.Topics = electAnswers(order, answers)
		respond(resp)
	}
	targets := r.electTargets(req.Topics)
	if !r.authorize(c, req).cluster(kmsg.ACLOperationAlter) {
		resp.ErrorCode = errClusterAuth.Code
		for _, tp := range targets {
			answer(tp, errClusterAuth)
		}
		finish()
		return
	}
	var waiting []*election
	for _, tp := range targets {
		e, err := r.electOne(tp, req.ElectionType)
		answer(tp, err)
		if e != nil {
			waiting = append(waiting, e)
		}
	}
	if len(waiting) == 0 {
		finish()
		return
	}
	r.awaitMetadata(r.requestDeadline(req.TimeoutMillis), func(expired bool) bool {
		left := 0
		for _, e := range waiting {
			if !e.done && r.electStep(e) {
				e.done = true
				answer(topicPartition{e.topic, e.part}, nil)
			}
			if !e.done {
				left++
				if expired {
					answer(topicPartition{e.topic, e.part}, withMessage(kerr.RequestTimedOut, "the preferred replica did not take the lead in time"))
				}
			}
		}
		if left == 0 || expired {
			finish()
			return true
		}
		return false
	})
}

// electTargets lists the partitions a request names, or every partition
// when it names none (null), in the request's order.
func (r *Reactor) electTargets(topics []kmsg.ElectLeadersRequestTopic) []topicPartition {
	var out []topicPartition
	if topics == nil {
		st := r.ctl.state
		for _, name := range st.TopicNames() {
			for _, p := range st.Topics[name].Partitions {
				out = append(out, topicPartition{name, p.Index})
			}
		}
		return out
	}
	for _, t := range topics {
		for _, p := range t.Partitions {
			out = append(out, topicPartition{t.Topic, p})
		}
	}
	return out
}

// electOne starts one partition's election: an error when it is settled
// at once (the error may be nil only with a waiting election).
func (r *Reactor) electOne(tp topicPartition, kind int8) (*election, error) {
	p := r.partitionNamed(tp.topic, tp.partition)
	if p == nil {
		return nil, kerr.UnknownTopicOrPartition
	}
	lead, _ := r.partitionLeader(p)
	switch {
	case kind == 1 && lead > 0:
		return nil, kerr.ElectionNotNeeded
	case kind == 1:
		return nil, withMessage(kerr.EligibleLeadersNotAvailable, "Raft elects only a replica holding every committed record; it will once a quorum of replicas is up")
	case kind != 0:
		return nil, withMessage(kerr.InvalidRequest, "unknown election type")
	case len(p.Replicas) == 0:
		return nil, kerr.PreferredLeaderNotAvailable
	}
	pref := p.Replicas[0]
	switch b, ok := r.ctl.state.Brokers[pref]; {
	case lead == pref:
		return nil, kerr.ElectionNotNeeded
	case !ok || b.Decommissioned:
		return nil, withMessage(kerr.PreferredLeaderNotAvailable, "the preferred replica's broker is decommissioned or not registered")
	case lead <= 0:
		return nil, withMessage(kerr.PreferredLeaderNotAvailable, "the partition has no leader now")
	}
	e := &election{topic: tp.topic, part: tp.partition, group: p.Group, pref: pref, lastSent: -electResend}
	r.electStep(e)
	return e, nil
}

// partitionNamed is a partition of the applied metadata, or nil.
func (r *Reactor) partitionNamed(topic string, part int32) *controller.Partition {
	t := r.ctl.state.Topics[topic]
	if t == nil || part < 0 || int(part) >= len(t.Partitions) {
		return nil
	}
	return &t.Partitions[part]
}

// electStep reports whether e's preferred replica leads now, else asks
// the leader to hand over (again, when electResend has passed).
func (r *Reactor) electStep(e *election) bool {
	p := r.partitionNamed(e.topic, e.part)
	if p == nil || p.Group != e.group {
		return false
	}
	lead, _ := r.partitionLeader(p)
	if lead == e.pref {
		return true
	}
	now := r.env.Clock.Monotonic()
	if lead <= 0 || now-e.lastSent < electResend {
		return false
	}
	e.lastSent = now
	if uint64(lead) == r.self {
		r.transferToPreferred(e.group, uint64(e.pref))
		return false
	}
	var w wire.Writer
	w.U8(frameRPC)
	w.U8(rpcElectPreferred)
	w.Uvarint(e.group)
	w.Uvarint(uint64(e.pref))
	r.env.Net.Send(netx.NodeID(lead), w.B)
	return false
}

// handleElectRPC serves a peer's rpcElectPreferred.
func (r *Reactor) handleElectRPC(rd *wire.Reader) {
	group, pref := rd.Uvarint(), rd.Uvarint()
	if rd.Done() != nil {
		r.stats.BadFrames++
		return
	}
	r.transferToPreferred(group, pref)
}

// transferToPreferred hands leadership of a group this node leads to
// pref when pref is one of its live voters.
func (r *Reactor) transferToPreferred(group, pref uint64) {
	p := r.parts[group]
	if p == nil || !p.IsLeader() || pref == r.self {
		return
	}
	status := p.Replica().Status()
	for _, pr := range status.Progress {
		if pr.ID == pref && !pr.IsLearner && pr.RecentActive {
			p.Replica().TransferLeader(pref)
			r.queueProcess()
		}
	}
}

// electAnswers groups the partition answers by topic, in first-named
// order.
func electAnswers(order []topicPartition, answers map[topicPartition]*kmsg.ElectLeadersResponseTopicPartition) []kmsg.ElectLeadersResponseTopic {
	var out []kmsg.ElectLeadersResponseTopic
	at := map[string]int{}
	for _, tp := range order {
		i, ok := at[tp.topic]
		if !ok {
			i = len(out)
			at[tp.topic] = i
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = tp.topic
			out = append(out, rt)
		}
		out[i].Partitions = append(out[i].Partitions, *answers[tp])
	}
	return out
}

// expiredElectLeaders is the answer when the request's deadline passes.
func expiredElectLeaders(q *kmsg.ElectLeadersRequest) kmsg.Response {
	resp := q.ResponseKind().(*kmsg.ElectLeadersResponse)
	var order []topicPartition
	answers := map[topicPartition]*kmsg.ElectLeadersResponseTopicPartition{}
	for _, t := range q.Topics {
		for _, part := range t.Partitions {
			tp := topicPartition{t.Topic, part}
			if answers[tp] == nil {
				a := kmsg.NewElectLeadersResponseTopicPartition()
				a.Partition, a.ErrorCode = part, kerr.RequestTimedOut.Code
				answers[tp] = &a
				order = append(order, tp)
			}
		}
	}
	resp.Topics = electAnswers(order, answers)
	return resp
}
