package node

// Metadata (key 3), versions 0-12.
//
// Lists the registered brokers (each with the Kafka address it advertises),
// the controller (the controller group's Raft leader), and the requested
// topics (all when the list is null; none when it is empty, v1+). A
// partition's leader is what this broker's own replica of it knows when it
// hosts one, else the leader last reported to the controller, unless that
// is this broker, which knows it does not lead (then none,
// LEADER_NOT_AVAILABLE: partitionLeader says when). ISR is the
// set of voters caught up with the leader's log recently (isr.go); off the
// leader it is the replica set.
//
// Unknown topics are created when auto-creation is on and the request
// allows it (v4+; always allowed before v4, as Kafka does); the answer is
// then LEADER_NOT_AVAILABLE and the client asks again. v10+ may name topics
// by id. v13 (top-level error code) is not advertised.
//
// While this broker's metadata has not caught up with the controller since
// it started (catchup.go), a topic it does not know may exist: it is
// answered LEADER_NOT_AVAILABLE, which clients retry, rather than
// UNKNOWN_TOPIC_OR_PARTITION, which they give up on after a few tries, and
// nothing is auto-created. Right after a start the answer waits, up to
// 5 s, for that catch-up (catchup.go, "Held cluster listings"), so that a
// restarted broker does not list a partial set of brokers.
//
// Authorization (as Kafka's KafkaApis does it): a listing of every topic
// leaves out the topics the client may not DESCRIBE, silently; a topic
// named (or asked for by id) that it may not DESCRIBE gets
// TOPIC_AUTHORIZATION_FAILED whether or not it exists (so its existence is
// not disclosed); auto-creation also needs CREATE on the cluster or on the
// topic, else TOPIC_AUTHORIZATION_FAILED. Authorized-operations bitfields:
// per topic when IncludeTopicAuthorizedOperations (v8+), for the cluster
// when IncludeClusterAuthorizedOperations (v8-10).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/acl"
	"github.com/floe-broker/floe/node/controller"
)

func serveMetadata(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	if r.holdListing(serveMetadata, c, kreq, respond) {
		return
	}
	req := kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	az := r.authorize(c, req)
	if req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = az.ops(kmsg.ACLResourceTypeCluster, acl.ClusterName)
	}
	withOps := func(mt kmsg.MetadataResponseTopic) kmsg.MetadataResponseTopic {
		if req.IncludeTopicAuthorizedOperations && mt.Topic != nil {
			mt.AuthorizedOperations = az.ops(kmsg.ACLResourceTypeTopic, *mt.Topic)
		}
		return mt
	}
	st := r.ctl.state
	resp.ClusterID = kmsg.StringPtr(st.ClusterID)
	resp.ControllerID = -1
	if lead := r.controllerLeader(); lead != 0 {
		resp.ControllerID = int32(lead)
	}
	resp.Brokers = r.metadataBrokers(c.Listener)

	if req.Topics == nil {
		for _, name := range st.TopicNames() {
			if az.sees(kmsg.ACLResourceTypeTopic, name, kmsg.ACLOperationDescribe) {
				resp.Topics = append(resp.Topics, withOps(r.metadataTopic(st.Topics[name])))
			}
		}
		respond(resp)
		return
	}
	autoCreate := r.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	caughtUp, _ := r.metadataReady()
	for _, rt := range req.Topics {
		t := lookupTopic(st, rt.Topic, rt.TopicID)
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = rt.Topic
		mt.TopicID = rt.TopicID
		if name := topicNameOf(rt.Topic, t); name != "" && !az.topic(name, kmsg.ACLOperationDescribe) {
			mt.ErrorCode = errTopicAuth.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if t != nil {
			resp.Topics = append(resp.Topics, withOps(r.metadataTopic(t)))
			continue
		}
		mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		switch {
		case !caughtUp:
			mt.ErrorCode = kerr.LeaderNotAvailable.Code
		case rt.Topic != nil && autoCreate && !az.sees(kmsg.ACLResourceTypeCluster, acl.ClusterName, kmsg.ACLOperationCreate) &&
			!az.topic(*rt.Topic, kmsg.ACLOperationCreate):
			mt.ErrorCode = errTopicAuth.Code
		case rt.Topic != nil && autoCreate:
			if err := controller.ValidateTopicName(*rt.Topic); err != nil {
				mt.ErrorCode = kerr.InvalidTopicException.Code
			} else {
				r.autoCreate(*rt.Topic)
				mt.ErrorCode = kerr.LeaderNotAvailable.Code
			}
		}
		resp.Topics = append(resp.Topics, mt)
	}
	respond(resp)
}

// topicNameOf is the name of a topic a request names, or "" when it names
// an unknown id.
func topicNameOf(name *string, t *controller.Topic) string {
	switch {
	case name != nil:
		return *name
	case t != nil:
		return t.Name
	}
	return ""
}

func lookupTopic(st *controller.State, name *string, id [16]byte) *controller.Topic {
	if name != nil {
		return st.Topics[*name]
	}
	if id == ([16]byte{}) {
		return nil
	}
	for _, n := range st.TopicNames() {
		if st.Topics[n].ID == id {
			return st.Topics[n]
		}
	}
	return nil
}

// metadataBrokers lists the brokers with their addresses on the named
// listener; a broker without one is left out, as Kafka does.
func (r *Reactor) metadataBrokers(listener string) []kmsg.MetadataResponseBroker {
	st := r.ctl.state
	var out []kmsg.MetadataResponseBroker
	for _, id := range st.BrokerIDs() {
		b := st.Brokers[id]
		// A decommissioned broker leaves Metadata once it holds no replica,
		// unless it is a controller voter (clients must still reach the
		// controller through it).
		if b.Decommissioned && !r.holdsReplicas(id) && !slices.Contains(r.ctl.rep.Conf().Voters, uint64(id)) {
			continue
		}
		host, port, ok := b.Address(listener)
		if !ok {
			continue
		}
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port = b.ID, host, port
		if b.Rack != "" {
			mb.Rack = kmsg.StringPtr(b.Rack)
		}
		out = append(out, mb)
	}
	return out
}

// holdsReplicas reports whether a broker still holds a replica of any
// partition (or is the target of a move).
func (r *Reactor) holdsReplicas(id int32) bool {
	st := r.ctl.state
	for _, name := range st.TopicNames() {
		for _, p := range st.Topics[name].Partitions {
			if slices.Contains(p.Replicas, id) || slices.Contains(p.Target, id) {
				return true
			}
		}
	}
	return false
}

func (r *Reactor) metadataTopic(t *controller.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = kmsg.StringPtr(t.Name)
	mt.TopicID = t.ID
	mt.IsInternal = t.Internal
	for i := range t.Partitions {
		p := &t.Partitions[i]
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.Index
		mp.Leader, mp.LeaderEpoch = r.partitionLeader(p)
		if r.buggify(bugMetadataNoLeader) {
			mp.Leader, mp.LeaderEpoch = -1, -1 // BUGGIFY: as during an election
		}
		mp.Replicas = append([]int32(nil), p.Replicas...)
		mp.ISR = r.partitionISR(p)
		if mp.Leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// partitionLeader returns the leader and epoch of a partition as well as
// this broker knows them: from its own replica when it holds one and that
// replica knows a leader, else from the leader last reported to the
// controller.
//
// Except when that record names this broker, whose replica knows no leader
// and was opened longer ago than a restart's first election takes
// (leaderlessGraceTicks): the broker then names none (-1,
// LEADER_NOT_AVAILABLE). That is a leader that stepped down for lack of a
// quorum, whose record the controller, without a quorum either, could not
// correct; naming it sent clients round for ever: Produce,
// NOT_LEADER_OR_FOLLOWER, Metadata, the same leader again (issue 24). Right
// after a restart the record is kept: the broker is likely to lead again
// within moments, and clients retry NOT_LEADER_OR_FOLLOWER.
func (r *Reactor) partitionLeader(p *controller.Partition) (int32, int32) {
	if lp, ok := r.parts[p.Group]; ok {
		if lp.Leader() != 0 {
			return int32(lp.Leader()), int32(lp.Term())
		}
		if p.Leader == int32(r.self) && r.ticks-r.group(p.Group).openedTick > r.leaderlessGraceTicks() {
			return -1, -1
		}
	}
	if p.Leader > 0 {
		return p.Leader, p.LeaderEpoch
	}
	return -1, -1
}

// leaderlessGraceTicks is how long a freshly opened replica may know no
// leader before its broker stops naming itself from the controller's
// record: a randomized election timeout (up to twice ElectionTicks) and a
// pre-vote round.
func (r *Reactor) leaderlessGraceTicks() uint64 { return 3 * uint64(r.cfg.ElectionTicks) }

// partitionISR returns the replicas in sync: on the leader, the voters
// caught up with its log within the lag window (isr.go); elsewhere, the
// replicas.
func (r *Reactor) partitionISR(p *controller.Partition) []int32 {
	lp, ok := r.parts[p.Group]
	if !ok || !lp.IsLeader() {
		return append([]int32(nil), p.Replicas...)
	}
	var isr []int32
	for _, id := range r.inSyncVoters(p.Group) {
		isr = append(isr, int32(id))
	}
	return isr
}
