package node

// ShareGroupHeartbeat (key 76), versions 0-1 (KIP-932): joins (epoch 0),
// heartbeats, and leaves (epoch -1) a share group, answered at once by the
// group's coordinator (shares.go). Assignment is server side: every member
// gets every partition of the topics it subscribes to, since a
// share-partition serves many consumers (node/share's Group). The member
// id is the client's. A member that left or timed out has the records it
// held released for redelivery.
//
// Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED); topics
// the client may not DESCRIBE are dropped from its subscription, as in
// Kafka.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/group"
	"github.com/floe-broker/floe/node/share"
)

func serveShareGroupHeartbeat(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.ShareGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	az := r.authorize(c, req)
	fail := func(err *kerr.Error) {
		resp.ErrorCode = err.Code
		respond(resp)
	}
	sh, kerrr := r.authorizedShareShard(az, req.GroupID, kmsg.ACLOperationRead)
	if kerrr != nil {
		fail(kerrr)
		return
	}
	if r.groupIsClassic(req.GroupID) {
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	g := sh.shareGroup(req.GroupID, req.MemberEpoch == 0)
	if g == nil {
		fail(kerr.UnknownMemberID)
		return
	}
	r.expireMembers(sh, g)
	var topics []string
	if req.SubscribedTopicNames != nil {
		topics = []string{}
		for _, t := range req.SubscribedTopicNames {
			if az.topic(t, kmsg.ACLOperationDescribe) {
				topics = append(topics, t)
			}
		}
	}
	cl := groupClient(c)
	epoch, assigned, err := g.Heartbeat(r.monoNow(), r.cfg.Shares.withDefaults().group(), share.Heartbeat{
		MemberID: req.MemberID, ClientID: cl.ID, ClientHost: cl.Host, Rack: req.RackID,
		MemberEpoch: req.MemberEpoch, Topics: topics,
	}, r.sharePartitions)
	if err != nil {
		fail(heartbeatError(err))
		return
	}
	if req.MemberEpoch == -1 {
		r.releaseMember(sh, req.GroupID, req.MemberID)
	}
	resp.MemberID = kmsg.StringPtr(req.MemberID)
	resp.MemberEpoch = epoch
	resp.HeartbeatIntervalMillis = int32(r.cfg.Shares.withDefaults().HeartbeatInterval.Milliseconds())
	if assigned != nil {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		for _, t := range sortedKeys(assigned) {
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = r.ctl.state.Topics[t].ID, assigned[t]
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		resp.Assignment = &a
	}
	respond(resp)
}

func heartbeatError(err error) *kerr.Error {
	switch {
	case errors.Is(err, share.ErrUnknownMember):
		return kerr.UnknownMemberID
	case errors.Is(err, share.ErrFencedEpoch):
		return kerr.FencedMemberEpoch
	case errors.Is(err, share.ErrGroupFull):
		return kerr.GroupMaxSizeReached
	}
	return kerr.InvalidRequest
}

// groupIsClassic reports whether a classic group of this name exists on
// its coordinator here (a share group may not take its name).
func (r *Reactor) groupIsClassic(name string) bool {
	co, err := r.coordinatorFor(name)
	if err != nil {
		return false
	}
	st, _ := co.GroupState(name)
	return st != group.Dead
}
