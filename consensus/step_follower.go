package consensus

// stepFollower handles messages as a follower of term r.term.
func (r *raft) stepFollower(m Message) {
	switch m.Type {
	case MsgApp:
		r.heardFromLeader(m.From)
		r.handleAppend(m)
	case MsgHeartbeat:
		r.heardFromLeader(m.From)
		r.handleHeartbeat(m)
	case MsgSnap:
		r.heardFromLeader(m.From)
		r.handleSnapshot(m)
	case MsgTimeoutNow:
		// The leader hands us leadership: campaign now, skipping pre-vote.
		if r.hup(campaignTransfer) {
			r.counters.CampaignsTransfer++
		}
	case MsgReadIndexResp:
		r.readStates = append(r.readStates, ReadState{Index: m.Index, RequestCtx: m.Context})
	}
}

func (r *raft) heardFromLeader(lead uint64) {
	r.electionElapsedTicks = 0
	r.lead = lead
	r.leadHeardAt = r.ticks
}

// handleAppend is a follower's answer to MsgApp: accept and acknowledge up
// to the last entry the leader vouched for, or reject with a hint where our
// logs may match.
func (r *raft) handleAppend(m Message) {
	if m.Index < r.log.committed {
		// Everything up to our commit index is settled; say so.
		r.send(Message{To: m.From, Type: MsgAppResp, Index: r.log.committed})
		return
	}
	if lastNew, ok := r.log.maybeAppend(m.Index, m.LogTerm, m.Commit, m.Entries); ok {
		r.send(Message{To: m.From, Type: MsgAppResp, Index: lastNew})
		return
	}
	// Our log has no entry (m.Index, m.LogTerm). Find the last index at or
	// below it whose term is at most m.LogTerm: the leader can then skip
	// all of our entries from a term it does not share in one round trip.
	hintIndex := min(m.Index, r.log.lastIndex())
	hintIndex, hintTerm := r.log.findConflictByTerm(hintIndex, m.LogTerm)
	resp := Message{
		To:         m.From,
		Type:       MsgAppResp,
		Index:      m.Index,
		Reject:     true,
		RejectHint: hintIndex,
		LogTerm:    hintTerm,
	}
	if r.fenced() {
		// We discarded entries the leader believes we hold: tell it, or it
		// would take this refusal for a stale one and never resend them.
		resp.Context = []byte(lostEntriesContext)
	}
	r.send(resp)
}

// handleHeartbeat learns the commit index (the leader sends at most what it
// knows we hold) and answers, echoing any ReadIndex context. A follower
// that lost entries it acknowledged (a disk cut its log back) holds less
// than the leader knows: it commits only what it holds.
func (r *raft) handleHeartbeat(m Message) {
	r.learnLeaderLog(m)
	r.log.commitTo(min(m.Commit, r.log.lastIndex()))
	// A heartbeat's commit is at most what the leader counts as ours
	// (sendHeartbeat), so one past our log end means we lost entries we
	// acknowledged with no fence to say so: a broker restarted on an
	// empty disk under the same id. Same answer as a fenced member's.
	if r.fenced() || m.Commit > r.log.lastIndex() {
		// A leader with nothing new to send would never learn that we lost
		// entries it counts as ours: refuse, with our real log end.
		r.send(Message{To: m.From, Type: MsgAppResp, Index: r.log.lastIndex() + 1, Reject: true,
			RejectHint: r.log.lastIndex(), LogTerm: r.log.lastTerm(), Context: []byte(lostEntriesContext)})
	}
	r.send(Message{To: m.From, Type: MsgHeartbeatResp, Context: m.Context})
}
