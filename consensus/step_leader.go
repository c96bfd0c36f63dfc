package consensus

import "github.com/floe-broker/floe/internal/plant"

// stepLeader handles messages as the leader of r.term.
func (r *raft) stepLeader(m Message) {
	if m.Type == MsgReadIndex {
		r.handleReadIndex(readRequest{from: m.From, ctx: m.Context})
		return
	}
	pr := r.trk.progress[m.From]
	if pr == nil {
		return
	}
	switch m.Type {
	case MsgAppResp:
		pr.recentActive = true
		if m.Reject {
			r.handleAppendReject(m, pr)
		} else {
			r.handleAppendAck(m, pr)
		}
		r.noteHeard(pr)
	case MsgHeartbeatResp:
		r.handleHeartbeatResponse(m, pr)
		r.noteHeard(pr)
	}
}

// handleAppendReject backs up the follower's next index. With the hint
// (RejectHint, LogTerm) the follower's log has no entry with a term greater
// than LogTerm at or below RejectHint's match, so our own log tells how far
// to skip: to the last of our entries at or below RejectHint whose term is
// at most LogTerm.
func (r *raft) handleAppendReject(m Message, pr *progress) {
	next := m.RejectHint
	if m.LogTerm > 0 {
		next, _ = r.log.findConflictByTerm(m.RejectHint, m.LogTerm)
	}
	if string(m.Context) == lostEntriesContext {
		// Its heartbeats carry our log end from now on (fence.go).
		pr.lostEntries = true
	}
	if string(m.Context) == lostEntriesContext && pr.match > next {
		// A fenced member (fence.go) lost entries we had counted as
		// matched. Lowering match is safe: commit never goes back, and a
		// lower match only makes further commits wait for others.
		pr.match = next
		pr.becomeProbe()
		r.sendAppend(m.From)
		return
	}
	if pr.maybeDecrTo(m.Index, next) {
		if pr.state == ProgressReplicate {
			pr.becomeProbe()
		}
		r.sendAppend(m.From)
	}
}

// handleAppendAck records that the follower holds our log up to m.Index.
func (r *raft) handleAppendAck(m Message, pr *progress) {
	if !pr.maybeUpdate(m.Index) && !(pr.match == m.Index && pr.state == ProgressProbe) {
		return // old news
	}
	if pr.lostEntries && pr.logEndSent > 0 && pr.match >= pr.logEndSent {
		// It holds the log end we sent it: its fence, if that heartbeat
		// reached it, is lifted; if not, its next refusal says so.
		pr.lostEntries, pr.logEndSent = false, 0
	}
	switch {
	case pr.state == ProgressProbe:
		pr.becomeReplicate()
	case pr.state == ProgressSnapshot && pr.match+1 >= r.log.firstIndex():
		// The snapshot (or appends) caught it up to entries we still have.
		pr.becomeProbe()
		pr.becomeReplicate()
	case pr.state == ProgressReplicate:
		pr.inflights.freeLE(m.Index)
	}
	if r.maybeCommit() {
		r.bcastAppend()
	} else {
		// Stream what flow control allows.
		sent := false
		for r.maybeSendAppend(m.From, false) {
			sent = true
		}
		if !sent && pr.sentCommit < min(pr.match, r.log.committed) {
			r.sendAppend(m.From) // it missed the commit broadcast
		}
	}
	if m.From == r.leadTransferee && pr.match == r.log.lastIndex() {
		r.sendTimeoutNow(m.From)
	}
}

// handleHeartbeatResponse: the follower is alive. Let a paused append
// through, and count the answer towards any ReadIndex it echoes.
func (r *raft) handleHeartbeatResponse(m Message, pr *progress) {
	pr.recentActive = true
	pr.probeSent = false
	if pr.state == ProgressReplicate && pr.inflights.full() {
		pr.inflights.freeFirstOne()
	}
	if pr.match < r.log.lastIndex() {
		r.sendAppend(m.From)
	}
	if len(m.Context) > 0 {
		r.handleReadIndexAck(m.From, m.Context)
	}
}

// appendEntries appends entries at our term. It refuses (false) when the
// uncommitted data cap is reached.
func (r *raft) appendEntries(es ...Entry) bool {
	bytes := payloadBytes(es)
	if r.maxUncommittedBytes > 0 && r.uncommittedBytes > 0 && r.uncommittedBytes+bytes > r.maxUncommittedBytes {
		return false
	}
	last := r.log.lastIndex()
	for i := range es {
		es[i].Term = r.term
		es[i].Index = last + 1 + uint64(i)
	}
	if !r.log.append(es...) {
		return false
	}
	r.uncommittedBytes += bytes
	// Our own log counts towards the quorum only once durable, which
	// Advance reports (onPersisted).
	return true
}

// onPersisted runs when Advance reports our log durable up to the
// persisted index: the leader's own acknowledgement.
func (r *raft) onPersisted() {
	if r.state != StateLeader {
		return
	}
	pr := r.trk.progress[r.id]
	if pr == nil || !pr.maybeUpdate(r.log.persistedIndex()) {
		return
	}
	if r.maybeCommit() {
		r.bcastAppend()
	}
}

// maybeCommit advances the commit index to what a majority holds, but only
// to an entry of the current term: an older term's entry held by a majority
// can still be overwritten (Figure 8 of the Raft paper). It commits with
// this term's first entry instead.
func (r *raft) maybeCommit() bool {
	index := r.trk.committedIndex()
	if index <= r.log.committed {
		return false
	}
	term, err := r.log.term(index)
	if err != nil {
		return false
	}
	if term != r.term && !plant.Enabled(plant.CommitPrevTerm) {
		return false
	}
	r.log.commitTo(index)
	r.releasePendingReadIndex()
	return true
}

// bcastAppend sends every other member what it lacks, or at least the
// commit index.
func (r *raft) bcastAppend() {
	for _, id := range r.trk.ids() {
		if id != r.id {
			r.maybeSendAppend(id, true)
		}
	}
}

func (r *raft) sendAppend(to uint64) { r.maybeSendAppend(to, true) }

// maybeSendAppend sends to one member the next entries it needs (a snapshot
// if we no longer hold them). sendIfEmpty sends even without entries, to
// carry the commit index or a probe. It reports whether a message was sent.
func (r *raft) maybeSendAppend(to uint64, sendIfEmpty bool) bool {
	pr := r.trk.progress[to]
	if pr == nil || pr.isPaused() {
		return false
	}
	prevIndex := pr.next - 1
	prevTerm, errTerm := r.log.term(prevIndex)
	maxBytes := r.maxMsgBytes
	budget, limited := r.sendBudget[to]
	if limited && budget > 0 && maxBytes > 0 {
		maxBytes = min(maxBytes, uint64(budget)) // at least one entry still goes
	}
	ents, errEnts := r.log.entries(pr.next, maxBytes)
	if errTerm != nil || errEnts != nil {
		return r.maybeSendSnapshot(to, pr)
	}
	if limited && budget <= 0 {
		ents = nil // out of budget: the entries wait for AddSendBudget
	}
	if len(ents) == 0 && !sendIfEmpty {
		return false
	}
	r.send(Message{
		To:      to,
		Type:    MsgApp,
		Index:   prevIndex,
		LogTerm: prevTerm,
		Entries: ents,
		Commit:  r.log.committed,
	})
	last := prevIndex + uint64(len(ents))
	pr.sentEntries(last, len(ents), payloadBytes(ents))
	if limited {
		r.sendBudget[to] = budget - int64(payloadBytes(ents))
	}
	pr.sentCommit = max(pr.sentCommit, r.log.committed)
	return true
}

// bcastHeartbeat sends a heartbeat to every other member; ctx, if any, tags
// a ReadIndex round.
func (r *raft) bcastHeartbeat(ctx []byte) {
	for _, id := range r.trk.ids() {
		if id != r.id {
			r.sendHeartbeat(id, ctx)
		}
	}
}

// sendHeartbeat carries the commit index, but never past what the member
// is known to hold: it may not have our entries yet.
func (r *raft) sendHeartbeat(to uint64, ctx []byte) {
	pr := r.trk.progress[to]
	commit := min(pr.match, r.log.committed)
	pr.sentCommit = max(pr.sentCommit, commit)
	m := Message{To: to, Type: MsgHeartbeat, Commit: commit, Context: ctx}
	if pr.lostEntries {
		// A member that lost its log learns what it must catch up to
		// before it may vote again (fence.go).
		m.Index, m.LogTerm = r.log.lastIndex(), r.log.lastTerm()
		pr.logEndSent = m.Index
	}
	r.send(m)
}

// propose appends one entry on a leader.
func (r *raft) propose(e Entry) (uint64, uint64, error) {
	if r.state != StateLeader {
		return 0, 0, ErrNotLeader
	}
	if r.leadTransferee != 0 || r.trk.progress[r.id] == nil {
		// Leadership is being handed over, or we were removed.
		return 0, 0, ErrProposalDropped
	}
	if !r.appendEntries(e) {
		return 0, 0, ErrProposalDropped
	}
	r.bcastAppend()
	return r.log.lastIndex(), r.term, nil
}

// reduceUncommittedBytes forgets applied entries from the uncommitted cap.
func (r *raft) reduceUncommittedBytes(applied []Entry) {
	if r.state != StateLeader {
		return
	}
	r.uncommittedBytes -= min(r.uncommittedBytes, payloadBytes(applied))
}
