package consensus

// Status is a snapshot of a member's state for monitoring and for the
// application's decisions (for example: promote a learner once its Match
// is close to LastIndex).
type Status struct {
	ID uint64
	HardState
	SoftState
	Applied    uint64
	FirstIndex uint64
	LastIndex  uint64
	// LeadTransferee is the member leadership is being handed to, or 0.
	LeadTransferee uint64
	// TimeoutNowSent: this leader told a member to campaign at once in
	// this term (a leader transfer). That campaign ignores the followers'
	// lease promises and may start at any time in the term, so a leader
	// with TimeoutNowSent must not serve reads under a lease.
	TimeoutNowSent bool
	// SoleVoter: this member alone decides elections and commits: it is
	// the only voter of the membership whose majority counts (the applied
	// one, or on a leader the newest in its log while that differs,
	// newestconf.go). Such a leader cannot be deposed by an election, so
	// it may serve reads without a lease (node/lease.go).
	SoleVoter bool
	// PendingConfIndex: on a leader, no membership change is accepted
	// until the entry at this index is applied (the last change it
	// proposed, or its own term's first entry); 0 elsewhere.
	PendingConfIndex uint64
	Config           ConfState
	// Progress is the leader's view of every member (itself included),
	// sorted by ID; empty on other roles.
	Progress []PeerProgress
}

// PeerProgress is a leader's view of one member's log.
type PeerProgress struct {
	ID uint64
	// Match is the last index known durable on the member and equal to the
	// leader's log; Next is the next index the leader will send.
	Match, Next     uint64
	State           ProgressState
	IsLearner       bool
	RecentActive    bool
	PendingSnapshot uint64
	// InflightMsgs is the number of appends sent and not yet acknowledged.
	InflightMsgs int
	// HeardTicksAgo is how many of the leader's ticks ago it last heard
	// from the member (an append or heartbeat answer); CaughtUpTicksAgo
	// how many ago the member last held everything the leader's log held
	// (Kafka's LastFetchTimestamp and LastCaughtUpTimestamp, in ticks).
	// Both are 0 for the leader itself and -1 when not yet seen in this
	// leadership. For monitoring: nothing in Raft decides on them.
	HeardTicksAgo, CaughtUpTicksAgo int64
}

// BasicStatus is Status without Config and Progress: it allocates
// nothing, so a caller may ask for it on every Ready or every read.
func (rn *RawNode) BasicStatus() Status {
	r := rn.raft
	st := Status{
		ID:             r.id,
		HardState:      r.hardState(),
		SoftState:      r.softState(),
		Applied:        r.log.applied,
		FirstIndex:     r.log.firstIndex(),
		LastIndex:      r.log.lastIndex(),
		LeadTransferee: r.leadTransferee,
		TimeoutNowSent: r.timeoutNowSent,
		SoleVoter:      r.trk.soleDecider(r.id),
	}
	if r.state == StateLeader {
		st.PendingConfIndex = r.pendingConfIndex
	}
	return st
}

// HardSoft is BasicStatus's HardState and SoftState alone, for a caller
// that looks at every member often (the simulator's invariants) and needs
// nothing else of it.
func (rn *RawNode) HardSoft() (HardState, SoftState) {
	return rn.raft.hardState(), rn.raft.softState()
}

// Status reports the member's state.
func (rn *RawNode) Status() Status {
	r := rn.raft
	st := rn.BasicStatus()
	st.Config = r.trk.confState()
	if r.state != StateLeader {
		return st
	}
	for _, id := range r.trk.ids() {
		pr := r.trk.progress[id]
		st.Progress = append(st.Progress, PeerProgress{
			ID:              id,
			Match:           pr.match,
			Next:            pr.next,
			State:           pr.state,
			IsLearner:       pr.isLearner,
			RecentActive:    pr.recentActive,
			PendingSnapshot: pr.pendingSnapshot,
			InflightMsgs:    pr.inflights.count,
		})
		last := &st.Progress[len(st.Progress)-1]
		last.HeardTicksAgo, last.CaughtUpTicksAgo = r.seenTicksAgo(id, pr)
	}
	return st
}

var stateNames = [...]string{"StateFollower", "StateCandidate", "StateLeader", "StatePreCandidate"}

func (s StateType) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "StateUnknown"
}

var messageTypeNames = [...]string{
	MsgApp: "MsgApp", MsgAppResp: "MsgAppResp", MsgVote: "MsgVote", MsgVoteResp: "MsgVoteResp",
	MsgPreVote: "MsgPreVote", MsgPreVoteResp: "MsgPreVoteResp", MsgHeartbeat: "MsgHeartbeat",
	MsgHeartbeatResp: "MsgHeartbeatResp", MsgSnap: "MsgSnap", MsgSnapStatus: "MsgSnapStatus",
	MsgTimeoutNow: "MsgTimeoutNow", MsgTransferLeader: "MsgTransferLeader",
	MsgReadIndex: "MsgReadIndex", MsgReadIndexResp: "MsgReadIndexResp", MsgProp: "MsgProp",
	MsgTermQuery: "MsgTermQuery", MsgTermQueryResp: "MsgTermQueryResp",
}

func (t MessageType) String() string {
	if int(t) < len(messageTypeNames) && messageTypeNames[t] != "" {
		return messageTypeNames[t]
	}
	return "MsgUnknown"
}

func (t EntryType) String() string {
	switch t {
	case EntryNormal:
		return "EntryNormal"
	case EntryConfChange:
		return "EntryConfChange"
	}
	return "EntryApp"
}

func (t ConfChangeType) String() string {
	switch t {
	case ConfAddVoter:
		return "AddVoter"
	case ConfAddLearner:
		return "AddLearner"
	case ConfRemove:
		return "Remove"
	}
	return "Unknown"
}

// TermAt returns the term of entry i in the member's log, persisted or not
// (white-box checkers compare committed entries across members).
func (rn *RawNode) TermAt(i uint64) (uint64, error) { return rn.raft.log.term(i) }
