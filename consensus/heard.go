package consensus

// What a leader saw of its members' answers, in its own ticks, for
// monitoring (DescribeQuorum's LastFetchTimestamp and
// LastCaughtUpTimestamp): the application turns ticks into time at its
// edge. Nothing here feeds a Raft decision, and a new leadership starts
// with no notes (resetProgress makes new progress).

// seenNotes is one member's record on the leader.
type seenNotes struct {
	heard    bool   // an answer arrived in this leadership
	heardAt  uint64 // the leader's tick of the last answer
	endAt    uint64 // the leader's last index when that answer arrived
	caughtUp bool   // the member held the leader's whole log at some answer
	// caughtUpAt is the last tick the member was known to hold all the
	// leader's log as it stood then.
	caughtUpAt uint64
}

// noteHeard records an answer from a member (after its match moved). As
// Kafka's replica state does: the member is caught up now if it holds our
// whole log, and was caught up at its previous answer if it now holds
// what our log held then (under steady appends a follower is never level
// with the leader's log end, yet never behind by more than one round).
func (r *raft) noteHeard(pr *progress) {
	s, last := &pr.seen, r.log.lastIndex()
	switch {
	case pr.match >= last:
		s.caughtUp, s.caughtUpAt = true, r.ticks
	case s.heard && pr.match >= s.endAt:
		s.caughtUp, s.caughtUpAt = true, max(s.caughtUpAt, s.heardAt)
	}
	s.heard, s.heardAt, s.endAt = true, r.ticks, last
}

// seenTicksAgo is how many ticks ago the leader heard from member id and
// last saw it caught up; -1 for not yet, 0 and 0 for the leader itself.
func (r *raft) seenTicksAgo(id uint64, pr *progress) (heard, caughtUp int64) {
	if id == r.id {
		return 0, 0
	}
	heard, caughtUp = -1, -1
	if pr.seen.heard {
		heard = int64(r.ticks - pr.seen.heardAt)
	}
	if pr.seen.caughtUp {
		caughtUp = int64(r.ticks - pr.seen.caughtUpAt)
	}
	return heard, caughtUp
}

// LeadHeardTicksAgo is how many ticks ago this member last heard from the
// leader it follows (SoftState.Lead): 0 on the leader, -1 when it knows
// of none. A follower keeps a leader until it hears of a later term, and
// a learner never campaigns, so a silent leader stays its Lead for as
// long as no new one is elected: this says how stale that is. For the
// application's decisions; nothing in Raft decides on it.
func (rn *RawNode) LeadHeardTicksAgo() int64 {
	r := rn.raft
	switch {
	case r.lead == 0:
		return -1
	case r.lead == r.id:
		return 0
	}
	return int64(r.ticks - r.leadHeardAt)
}
