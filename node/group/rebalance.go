package group

// The rebalance, as Kafka's coordinator runs it:
//
//	Empty ──join──▶ PreparingRebalance ──all joined / timeout──▶ CompletingRebalance
//	  ▲                 ▲      │ (nobody left)                        │ leader's SyncGroup
//	  └─────────────────┼──────┘                                      ▼   written
//	                    └──── join, leave, expiry, metadata change ─ Stable
//
// PreparingRebalance ends when every member (and every member id handed out
// with MEMBER_ID_REQUIRED) has joined, or when the longest rebalance timeout
// runs out; dynamic members that did not rejoin by then are dropped, static
// ones are kept (their assignment stays theirs). An empty group's first
// rebalance instead waits InitialRebalanceDelay, extended while new members
// keep arriving, up to the rebalance timeout, so a fleet starting together
// gets one generation instead of one per member.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// prepareRebalance starts a rebalance (the caller checked canRebalance).
// Members waiting for a SyncGroup answer are told REBALANCE_IN_PROGRESS.
func (c *Coordinator) prepareRebalance(g *group, now time.Duration) {
	if !g.canRebalance() {
		c.checkJoin(g, now)
		return
	}
	if g.state == CompletingRebalance {
		c.propagateAssignments(g, now, kerr.RebalanceInProgress.Code, nil)
	}
	g.pendingSync = map[string]bool{}
	g.rebalanceSeq++
	seq := g.rebalanceSeq
	wasEmpty := g.state == Empty
	g.setState(PreparingRebalance, c.wallMillis())
	g.newMemberAdded = false
	if wasEmpty && c.cfg.InitialRebalanceDelay > 0 {
		g.delaying = true
		delay := c.cfg.InitialRebalanceDelay
		remaining := max(g.rebalanceTimeout()-delay, 0)
		c.env.Timers.After(delay, func(now time.Duration) { c.initialDelayEnded(g, seq, delay, remaining, now) })
		return
	}
	g.delaying = false
	c.env.Timers.After(g.rebalanceTimeout(), func(now time.Duration) { c.joinTimedOut(g, seq, now) })
	c.checkJoin(g, now)
}

// initialDelayEnded extends the initial delay while members keep coming
// (by at most delay at a time, within the rebalance timeout), then
// completes the join phase.
func (c *Coordinator) initialDelayEnded(g *group, seq uint64, delay, remaining, now time.Duration) {
	if c.closed || g.rebalanceSeq != seq || g.state != PreparingRebalance {
		return
	}
	if g.newMemberAdded && remaining > 0 {
		g.newMemberAdded = false
		next := min(delay, remaining)
		c.env.Timers.After(next, func(now time.Duration) { c.initialDelayEnded(g, seq, delay, remaining-next, now) })
		return
	}
	g.delaying = false
	c.completeJoin(g, now)
}

func (c *Coordinator) joinTimedOut(g *group, seq uint64, now time.Duration) {
	if c.closed || g.rebalanceSeq != seq || g.state != PreparingRebalance {
		return
	}
	c.completeJoin(g, now)
}

// checkJoin completes the join phase early once everyone has joined
// (never during the initial delay, which always runs its course).
func (c *Coordinator) checkJoin(g *group, now time.Duration) {
	if g.state == PreparingRebalance && !g.delaying && g.allJoined() {
		c.completeJoin(g, now)
	}
}

// completeJoin ends the join phase: drops dynamic members that did not
// rejoin, starts the next generation, and answers every parked join (the
// leader's with the member list).
func (c *Coordinator) completeJoin(g *group, now time.Duration) {
	for _, m := range append([]*member(nil), g.members...) {
		if m.joinWaiter == nil && !m.isStatic() {
			answerSync(m, kerr.UnknownMemberID.Code, nil)
			g.remove(m.id)
		}
	}
	g.rebalanceSeq++
	seq := g.rebalanceSeq
	if len(g.members) > 0 && !g.electJoinedLeader() {
		// Only static members that did not rejoin are left: wait for them
		// (or for their sessions to end) one more rebalance timeout.
		c.env.Timers.After(g.rebalanceTimeout(), func(now time.Duration) { c.joinTimedOut(g, seq, now) })
		return
	}
	g.generation++
	g.pendingSync = map[string]bool{}
	if len(g.members) == 0 {
		g.protocol = nil
		g.subscribed = nil
		g.setState(Empty, c.wallMillis())
		// Best effort, as in Kafka: if this is lost, the previous
		// generation comes back on failover and simply times out.
		c.storeGroup(g, nil, func(time.Duration, int16) {})
		return
	}
	p := g.selectProtocol()
	g.protocol = &p
	g.subscribed = g.computeSubscribed()
	g.setState(CompletingRebalance, c.wallMillis())
	for _, m := range g.members {
		g.answerJoin(m, c.currentGeneration(g, m, m.id == g.leader))
		m.isNew = false
		c.touch(g, m, now, m.session)
		g.pendingSync[m.id] = true
	}
	c.env.Timers.After(g.rebalanceTimeout(), func(now time.Duration) { c.pendingSyncExpired(g, seq, now) })
}

// electJoinedLeader keeps the leader if it rejoined, else makes the first
// member that rejoined the leader. It reports false when none did.
func (g *group) electJoinedLeader() bool {
	if m := g.byID[g.leader]; m != nil && m.joinWaiter != nil {
		return true
	}
	for _, m := range g.members {
		if m.joinWaiter != nil {
			g.leader = m.id
			return true
		}
	}
	return false
}

// pendingSyncExpired removes the members that were answered a generation
// but never sent their SyncGroup within the rebalance timeout, and
// rebalances without them.
func (c *Coordinator) pendingSyncExpired(g *group, seq uint64, now time.Duration) {
	if c.closed || g.rebalanceSeq != seq || len(g.pendingSync) == 0 {
		return
	}
	if g.state != CompletingRebalance && g.state != Stable {
		return
	}
	for _, m := range append([]*member(nil), g.members...) {
		if g.pendingSync[m.id] {
			g.remove(m.id)
		}
	}
	c.prepareRebalance(g, now)
}

// propagateAssignments answers every parked SyncGroup: with its member's
// assignment (code 0, after recording assignments) or with an error (the
// assignments are then cleared).
func (c *Coordinator) propagateAssignments(g *group, now time.Duration, code int16, assignments map[string][]byte) {
	for _, m := range g.members {
		if code == 0 {
			m.assignment = assignments[m.id]
			m.synced = m.assignment
		} else {
			m.assignment = nil
		}
		if m.syncWaiter != nil {
			answerSync(m, code, m.assignment)
			c.touch(g, m, now, m.session)
		}
	}
}

// storeGroup writes the group's metadata record: its generation and
// members, with assignments (nil: each member's current one). done gets the
// outcome as a group error code.
func (c *Coordinator) storeGroup(g *group, assignments map[string][]byte, done func(now time.Duration, code int16)) {
	rec := Record{Key: groupKey(g.name), Value: groupValue(g, assignments)}
	c.env.Log.Write([]Record{rec}, func(now time.Duration, err error) {
		done(now, storeErrorCode(err, kerr.UnknownServerError))
	})
}

// groupValue is the group's metadata record value, with assignments (nil:
// each member's current one).
func groupValue(g *group, assignments map[string][]byte) []byte {
	v := kmsg.NewGroupMetadataValue()
	v.Version = 3
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	v.Protocol = g.protocol
	if g.state != Empty && g.leader != "" {
		leader := g.leader
		v.Leader = &leader
	}
	v.CurrentStateTimestamp = g.stateMillis
	for _, m := range g.members {
		gm := kmsg.NewGroupMetadataValueMember()
		gm.MemberID, gm.InstanceID = m.id, m.instanceID
		gm.ClientID, gm.ClientHost = m.clientID, m.clientHost
		gm.RebalanceTimeoutMillis = int32(m.rebalance / time.Millisecond)
		gm.SessionTimeoutMillis = int32(m.session / time.Millisecond)
		if g.protocol != nil {
			gm.Subscription = m.metadataFor(*g.protocol)
		}
		gm.Assignment = m.assignment
		if assignments != nil {
			gm.Assignment = assignments[m.id]
		}
		v.Members = append(v.Members, gm)
	}
	return v.AppendTo(nil)
}
