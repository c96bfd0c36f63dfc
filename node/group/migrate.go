package group

// Online migration between the classic and the consumer protocol
// (KIP-848's upgrade and downgrade, as Kafka 4.0's GroupMetadataManager
// does it), under group.consumer.migration.policy
// (Config.ConsumerMigrationPolicy):
//
//   - Upgrade: a ConsumerGroupHeartbeat join (epoch 0) on a classic group
//     with members converts it to a consumer group (fromClassic), when the
//     policy allows upgrades, the group uses the "consumer" protocol type
//     with readable subscriptions and assignments, and it has no more
//     members than group.consumer.max.size; otherwise GROUP_ID_NOT_FOUND,
//     as Kafka. The group epoch and every member's epoch start at the
//     classic generation; each classic member's current and target
//     assignment is the last assignment it was handed (what it may still
//     own), so nothing it holds is given to another member before it gives
//     it up. Its parked JoinGroup and SyncGroup are answered
//     REBALANCE_IN_PROGRESS, and the joining member's heartbeat bumps the
//     epoch. Offsets stay (they are keyed by group).
//   - Classic members inside a consumer group keep JoinGroup, SyncGroup,
//     Heartbeat, LeaveGroup and OffsetCommit: a JoinGroup reconciles the
//     member one step (its subscription's owned partitions count as what
//     it reports owning) and answers its member epoch as the generation,
//     with no leader; SyncGroup hands it its current assignment, encoded in
//     the consumer protocol; Heartbeat answers REBALANCE_IN_PROGRESS when
//     it must rejoin (the group epoch passed it, it has partitions to
//     revoke, or partitions it waits for are free), and it is fenced if it
//     does not rejoin, or sync after a join, within its rebalance timeout,
//     or stays silent for its own (classic) session timeout. Its commits
//     need its exact epoch as the generation (ILLEGAL_GENERATION).
//   - Downgrade: when the last consumer-protocol member leaves (epoch -1)
//     or is fenced and only classic members remain, the group becomes a
//     classic group again at generation = the group epoch, each member with
//     its current assignment, and rebalances at once; unless the policy
//     forbids downgrades or the members exceed group.max.size (it then stays
//     a consumer group of classic members).
//
// The records: an upgrade writes the classic metadata's tombstone and the
// consumer group's image in one batch; a downgrade the image's tombstone
// and the classic metadata in one batch.

import (
	"sort"
	"time"

	"github.com/floe-broker/floe/internal/plant"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicMember is what a classic member of a consumer group joined with.
type classicMember struct {
	SessionMillis int32             `json:"session_ms"`
	Protocols     []classicProtocol `json:"protocols"`
}

type classicProtocol struct {
	Name     string `json:"name"`
	Metadata []byte `json:"metadata,omitempty"`
}

// checkUpgrade says whether a classic group with members may become a
// consumer group now (Kafka's validateOnlineUpgrade).
func (c *Coordinator) checkUpgrade(g *group) (*kerr.Error, string) {
	switch {
	case !c.cfg.upgradeEnabled():
		return kerr.GroupIDNotFound, "Cannot upgrade classic group " + g.name + " to consumer group because online upgrade is disabled."
	case g.protocolType != "consumer":
		return kerr.GroupIDNotFound, "Cannot upgrade classic group " + g.name + " to consumer group because the group does not use the consumer embedded protocol."
	case c.cfg.ConsumerMaxSize > 0 && len(g.members) > c.cfg.ConsumerMaxSize:
		return kerr.GroupIDNotFound, "Cannot upgrade classic group " + g.name + " to consumer group because the group size exceeds the consumer group maximum size."
	}
	return nil, ""
}

// fromClassic builds the consumer group a classic group becomes (Kafka's
// ConsumerGroup.fromClassicGroup); the classic group is not changed. It
// fails (GROUP_ID_NOT_FOUND) when a member's subscription or assignment
// does not decode.
func (c *Coordinator) fromClassic(g *group) (*consumerGroup, *kerr.Error, string) {
	cg := newConsumerGroup()
	if len(g.members) == 0 {
		return cg, nil, ""
	}
	proto := ""
	if g.protocol != nil {
		proto = *g.protocol
	} else {
		proto = g.selectProtocol()
	}
	malformed := "Cannot upgrade classic group " + g.name + " to consumer group because the embedded consumer protocol is malformed."
	cg.Epoch, cg.AssignmentEpoch = g.generation, g.generation
	for _, m := range g.members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadataFor(proto)); err != nil {
			return nil, kerr.GroupIDNotFound, malformed
		}
		owned, err := decodeAssignment(m.synced)
		if err != nil {
			return nil, kerr.GroupIDNotFound, malformed
		}
		if plant.Enabled(plant.MigrationForgetsClassicAssignment) {
			owned = assignment{}
		}
		cm := &cmember{
			ID: m.id, InstanceID: m.instanceID, Rack: md.Rack, ClientID: m.clientID, ClientHost: m.clientHost,
			Epoch: g.generation, PrevEpoch: g.generation, State: memberStable,
			Topics:          sortedDedup(md.Topics),
			RebalanceMillis: int32(m.rebalance / time.Millisecond),
			Assigned:        owned, Target: owned.clone(),
			Classic: &classicMember{SessionMillis: int32(m.session / time.Millisecond), Protocols: toClassicProtocols(m.protocols)},
		}
		cg.Members[cm.ID] = cm
	}
	c.refreshMetadata(cg, c.heartbeatTopics()) // the subscribed topics as they are: no epoch bump of its own
	return cg, nil, ""
}

// finishUpgrade retires a classic group's membership once it has become a
// consumer group: parked joins and syncs are told to rejoin, classic timers
// go stale.
func (c *Coordinator) finishUpgrade(g *group) {
	for _, m := range append([]*member(nil), g.members...) {
		g.answerJoin(m, joinResult{code: kerr.RebalanceInProgress.Code, memberID: m.id, generation: -1})
		answerSync(m, kerr.RebalanceInProgress.Code, nil)
	}
	resetMembership(g)
	g.protocolType = "consumer"
	g.pending, g.pendingSync = map[string]uint64{}, map[string]bool{}
	g.delaying, g.newMemberAdded = false, false
	g.rebalanceSeq++
	g.subscribed = nil
	g.setState(Empty, c.wallMillis())
}

func toClassicProtocols(ps []protocol) []classicProtocol {
	out := make([]classicProtocol, 0, len(ps))
	for _, p := range ps {
		out = append(out, classicProtocol{Name: p.name, Metadata: p.metadata})
	}
	return out
}

func fromClassicProtocols(ps []classicProtocol) []protocol {
	out := make([]protocol, 0, len(ps))
	for _, p := range ps {
		out = append(out, protocol{name: p.Name, metadata: p.Metadata})
	}
	return out
}

func sortedDedup(ts []string) []string {
	out := append([]string{}, ts...)
	sort.Strings(out)
	return dedup(out)
}

// decodeAssignment reads a consumer-protocol assignment (empty: none).
func decodeAssignment(b []byte) (assignment, error) {
	out := assignment{}
	if len(b) == 0 {
		return out, nil
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return nil, err
	}
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			out.add(topicPartition{t.Topic, p})
		}
	}
	return out, nil
}

// encodeAssignment writes a consumer-protocol assignment at version v
// (the member's subscription version, at most 3).
func encodeAssignment(as assignment, v int16) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	a.Version = min(max(v, 0), 3)
	for _, t := range sortedTopics(as) {
		at := kmsg.ConsumerMemberAssignmentTopic{Topic: t, Partitions: append([]int32(nil), as[t]...)}
		a.Topics = append(a.Topics, at)
	}
	return a.AppendTo(nil)
}

// subscriptionVersion is the version of a classic member's first
// protocol's subscription (0 when unreadable).
func (m *cmember) subscriptionVersion() int16 {
	if m.Classic == nil || len(m.Classic.Protocols) == 0 {
		return 0
	}
	var md kmsg.ConsumerMemberMetadata
	if err := md.ReadFrom(m.Classic.Protocols[0].Metadata); err != nil {
		return 0
	}
	return md.Version
}

// classicProtocolsOK reports whether a classic member with this protocol
// type and these protocols may join the consumer group (Kafka's
// supportsClassicProtocols): the type must be "consumer", and one of its
// protocols one every classic member supports. It returns that protocol.
func (cg *consumerGroup) classicProtocolsOK(protocolType string, ps []protocol) (string, bool) {
	if protocolType != "consumer" || len(ps) == 0 {
		return "", false
	}
	for _, p := range ps {
		all := true
		for _, id := range cg.memberIDs() {
			if m := cg.Members[id]; m.Classic != nil && !hasClassicProtocol(m.Classic.Protocols, p.name) {
				all = false
				break
			}
		}
		if all {
			return p.name, true
		}
	}
	return "", false
}

func hasClassicProtocol(ps []classicProtocol, name string) bool {
	for _, p := range ps {
		if p.Name == name {
			return true
		}
	}
	return false
}

// classicJoinConsumer serves a JoinGroup on a consumer group with members
// (Kafka's classicGroupJoinToConsumerGroup).
func (c *Coordinator) classicJoinConsumer(g *group, a joinArgs, now time.Duration) {
	cg := g.cons
	fail := func(e *kerr.Error) { a.answer(joinResult{code: e.Code, memberID: a.memberID, generation: -1}) }
	proto, ok := cg.classicProtocolsOK(a.protocolType, a.protocols)
	if !ok {
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	var md kmsg.ConsumerMemberMetadata
	if err := md.ReadFrom(a.protocols[0].metadata); err != nil {
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	id := a.memberID
	var m *cmember
	var prev *cmember
	if a.instanceID != nil {
		prev = cg.byInstance(*a.instanceID)
	}
	switch {
	case id == "" && a.instanceID == nil && a.version >= 4:
		if c.cfg.ConsumerMaxSize > 0 && len(cg.Members) >= c.cfg.ConsumerMaxSize {
			fail(kerr.GroupMaxSizeReached)
			return
		}
		a.answer(joinResult{code: kerr.MemberIDRequired.Code, memberID: c.newMemberID(a.client.ID), generation: -1})
		return
	case id == "":
		prefix := a.client.ID
		if a.instanceID != nil {
			prefix = *a.instanceID
		}
		id = c.newMemberID(prefix)
	default:
		m = cg.Members[id]
		if m == nil && prev != nil {
			fail(kerr.FencedInstanceID)
			return
		}
		if m != nil && m.Classic == nil {
			fail(kerr.UnknownMemberID) // a consumer-protocol member's id
			return
		}
		if m == nil && a.version < 4 {
			fail(kerr.UnknownMemberID)
			return
		}
	}
	if m == nil && prev == nil && c.cfg.ConsumerMaxSize > 0 && len(cg.Members) >= c.cfg.ConsumerMaxSize {
		fail(kerr.GroupMaxSizeReached)
		return
	}
	if cg.writing == 0 {
		cg.committed = encodeConsumerGroup(cg)
	}
	before := encodeConsumerGroup(cg)
	bump := false
	// replaced is a consumer-protocol static member this classic member
	// replaces: if it was the last one, the group becomes classic.
	replaced := false
	switch {
	case m != nil:
	case prev != nil && prev.ID != id:
		// a static member's new incarnation takes over its assignment,
		// whatever protocol the previous one spoke (as Kafka's
		// getOrMaybeSubscribeStaticConsumerGroupMember)
		replaced = prev.Classic == nil
		m = cg.replaceStatic(prev, id)
	default:
		m = &cmember{ID: id, Assigned: assignment{}}
		cg.Members[id] = m
		bump = true
	}
	m.InstanceID = a.instanceID
	m.ClientID, m.ClientHost = a.client.ID, a.client.Host
	if md.Rack != nil && *md.Rack != "" {
		m.Rack = md.Rack
	}
	m.RebalanceMillis = int32(a.rebalance / time.Millisecond)
	m.Classic = &classicMember{SessionMillis: int32(a.session / time.Millisecond), Protocols: toClassicProtocols(a.protocols)}
	if ts := sortedDedup(md.Topics); !equalStrings(ts, m.Topics) {
		m.Topics, bump = ts, true
	}
	if m.Regex != "" || m.Assignor != "" {
		m.Regex, m.Assignor, bump = "", "", true
	}
	owned := assignment{}
	for _, op := range md.OwnedPartitions {
		for _, p := range op.Partitions {
			owned.add(topicPartition{op.Topic, p})
		}
	}
	ha := c.heartbeatTopics()
	if c.refreshMetadata(cg, ha) {
		bump = true
	}
	if bump {
		cg.Epoch++
	}
	c.maybeAssign(cg, ha)
	cg.reconcile(m, owned, now)
	m.rejoinBy = 0
	m.syncBy = now + millis(m.RebalanceMillis)
	c.touchConsumer(g, m, now)
	res := joinResult{memberID: id, generation: m.Epoch, protocolType: "consumer", protocol: &proto}
	if replaced && c.canDowngrade(g) {
		c.downgradeReplaced(g, a, res, now)
		return
	}
	after := encodeConsumerGroup(cg)
	if string(after) == string(before) && cg.writing == 0 {
		a.answer(res)
		return
	}
	c.writeConsumer(g, []Record{{Key: consumerKey(g.name), Value: after}}, func(code int16) {
		if code != 0 {
			a.answer(joinResult{code: code, memberID: id, generation: -1})
			return
		}
		a.answer(res)
	})
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// heartbeatTopics is the topic view a classic request reconciles with.
func (c *Coordinator) heartbeatTopics() hbArgs {
	var a hbArgs
	if c.env.Topics != nil {
		a.topics = c.env.Topics()
	}
	a.byName = make(map[string]TopicInfo, len(a.topics))
	for _, t := range a.topics {
		a.byName[t.Name] = t
	}
	return a
}

// classicMemberOf returns the classic member a classic request names, or
// its error (Kafka's validateConsumerGroupMember and
// throwIfMemberDoesNotUseClassicProtocol).
func (cg *consumerGroup) classicMemberOf(memberID string, instanceID *string) (*cmember, *kerr.Error) {
	m := cg.Members[memberID]
	if instanceID != nil {
		if s := cg.byInstance(*instanceID); s != nil && s.ID != memberID {
			return nil, kerr.FencedInstanceID
		}
	}
	if m == nil || m.Classic == nil {
		return nil, kerr.UnknownMemberID
	}
	return m, nil
}

// mustRejoin reports whether a classic member must rejoin (Kafka's
// classicGroupHeartbeatToConsumerGroup): the group epoch passed it, it has
// partitions to revoke, or partitions it waits for are free now.
func (cg *consumerGroup) mustRejoin(m *cmember) bool {
	switch {
	case m.Epoch < cg.Epoch, m.State == memberUnrevoked:
		return true
	case m.State == memberUnreleased:
		held := cg.ownedByOthers(m.ID)
		_, add := m.Target.split(m.Assigned)
		free := false
		add.each(func(tp topicPartition) { free = free || !held[tp] })
		return free
	}
	return false
}

// classicSyncConsumer serves a SyncGroup on a consumer group.
func (c *Coordinator) classicSyncConsumer(now time.Duration, g *group, req *kmsg.SyncGroupRequest, instanceID *string) (int16, []byte) {
	cg := g.cons
	m, e := cg.classicMemberOf(req.MemberID, instanceID)
	switch {
	case e != nil:
		return e.Code, nil
	case req.Generation != m.Epoch:
		return kerr.IllegalGeneration.Code, nil
	case req.ProtocolType != nil && *req.ProtocolType != "consumer":
		return kerr.InconsistentGroupProtocol.Code, nil
	case req.Protocol != nil && !hasClassicProtocol(m.Classic.Protocols, *req.Protocol):
		return kerr.InconsistentGroupProtocol.Code, nil
	}
	c.touchConsumer(g, m, now)
	if cg.Epoch > m.Epoch && m.State != memberUnrevoked {
		c.rejoinBy(g, m, now)
		return kerr.RebalanceInProgress.Code, nil
	}
	m.syncBy = 0
	return 0, encodeAssignment(m.Assigned, m.subscriptionVersion())
}

// rejoinBy starts a classic member's rejoin deadline, if none runs.
func (c *Coordinator) rejoinBy(g *group, m *cmember, now time.Duration) {
	if m.rejoinBy == 0 {
		m.rejoinBy = now + millis(m.RebalanceMillis)
		c.armConsumerTimer(g, m, now)
	}
}

// classicHeartbeatConsumer serves a Heartbeat on a consumer group.
func (c *Coordinator) classicHeartbeatConsumer(now time.Duration, g *group, memberID string, instanceID *string, generation int32) int16 {
	cg := g.cons
	m, e := cg.classicMemberOf(memberID, instanceID)
	switch {
	case e != nil:
		return e.Code
	case generation != m.Epoch:
		return kerr.IllegalGeneration.Code
	}
	c.touchConsumer(g, m, now)
	if cg.mustRejoin(m) {
		c.rejoinBy(g, m, now)
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// classicLeaveConsumer serves one member of a LeaveGroup on a consumer
// group (by member id, or by instance id with an empty member id).
func (c *Coordinator) classicLeaveConsumer(g *group, lm kmsg.LeaveGroupRequestMember, now time.Duration) int16 {
	cg := g.cons
	var m *cmember
	if lm.MemberID == "" {
		if lm.InstanceID != nil {
			m = cg.byInstance(*lm.InstanceID)
		}
		if m == nil {
			return kerr.UnknownMemberID.Code
		}
	} else {
		var e *kerr.Error
		if m, e = cg.classicMemberOf(lm.MemberID, lm.InstanceID); e != nil {
			return e.Code
		}
	}
	if cg.writing == 0 {
		cg.committed = encodeConsumerGroup(cg)
	}
	c.removeConsumerMember(g, m)
	c.writeConsumer(g, []Record{{Key: consumerKey(g.name), Value: encodeConsumerGroup(cg)}}, func(int16) {})
	return 0
}

// canDowngrade reports whether a consumer group whose consumer-protocol
// members are all gone may become classic (Kafka's
// validateOnlineDowngradeWithFencedMembers, after the removal).
func (c *Coordinator) canDowngrade(g *group) bool {
	cg := g.cons
	if cg == nil || len(cg.Members) == 0 || !c.cfg.downgradeEnabled() {
		return false
	}
	if c.cfg.MembersMax > 0 && len(cg.Members) > c.cfg.MembersMax {
		return false
	}
	for _, m := range cg.Members { //floe:unordered an all-of test
		if m.Classic == nil {
			return false
		}
	}
	return true
}

// downgradeReplaced converts the group to classic once a classic static
// member has replaced the last consumer-protocol member (Kafka's
// validateOnlineDowngradeWithReplacedMemberId and convertToClassicGroup
// with a joining member), and answers the member's JoinGroup once the
// records are written. The joining member holds what the replaced one
// held. As in Kafka, a group whose members all own exactly their target
// at the group epoch stays Stable: no rebalance, and the member's
// SyncGroup hands it its assignment. Kafka hands every member its target
// even while the group still reconciles; Floe then hands out only what
// each member owns (no partition goes to two members) and rebalances at
// once, so the classic leader assigns what is in flight.
func (c *Coordinator) downgradeReplaced(g *group, a joinArgs, res joinResult, now time.Duration) {
	reconciled := g.cons.stateName() == "Stable"
	if plant.Enabled(plant.DowngradeReplacedHandsTarget) {
		handTargets(g.cons)
		reconciled = true
	}
	recs := c.downgrade(g, now, !reconciled)
	res.protocol = g.protocol
	c.env.Log.Write(recs, func(_ time.Duration, err error) {
		if code := storeErrorCode(err, kerr.UnknownServerError); code != 0 {
			a.answer(joinResult{code: code, memberID: res.memberID, generation: -1})
			return
		}
		a.answer(res)
	})
}

// handTargets is the planted bug: each member's target becomes what it
// owns (Kafka's conversion, which hands out the target assignment), while
// other members may still own some of it.
func handTargets(cg *consumerGroup) {
	for _, id := range cg.memberIDs() {
		m := cg.Members[id]
		m.Assigned = m.Target.clone()
	}
}

// downgrade turns a consumer group of classic members back into a
// classic group (Kafka's convertToClassicGroup) and, if asked, starts a
// rebalance (after a member left). It returns the records to write: the
// image's tombstone and the classic metadata.
func (c *Coordinator) downgrade(g *group, now time.Duration, rebalance bool) []Record {
	cg := g.cons
	for _, m := range cg.Members { //floe:unordered marks timers stale
		m.gone = true
	}
	g.cons = nil
	resetMembership(g)
	g.protocolType = "consumer"
	g.generation = cg.Epoch
	for _, id := range cg.memberIDs() {
		cm := cg.Members[id]
		as := encodeAssignment(cm.Assigned, cm.subscriptionVersion())
		m := &member{
			id: cm.ID, instanceID: cm.InstanceID, clientID: cm.ClientID, clientHost: cm.ClientHost,
			rebalance: millis(cm.RebalanceMillis), session: millis(cm.Classic.SessionMillis),
			protocolType: "consumer", protocols: fromClassicProtocols(cm.Classic.Protocols),
			assignment: as, synced: as,
		}
		g.add(m)
	}
	p := g.selectProtocol()
	g.protocol = &p
	g.subscribed = g.computeSubscribed()
	g.setState(Stable, c.wallMillis())
	g.persisted = true
	recs := []Record{{Key: consumerKey(g.name)}, {Key: groupKey(g.name), Value: groupValue(g, nil)}}
	for _, m := range g.members {
		c.touch(g, m, now, m.session)
	}
	if rebalance {
		c.prepareRebalance(g, now)
	}
	return recs
}
