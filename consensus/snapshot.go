package consensus

// snapshotTimeoutElectionTimeouts is how many election timeouts a leader
// waits for a snapshot to be acknowledged before trying again. The network
// may lose a MsgSnap without anyone calling ReportSnapshot.
const snapshotTimeoutElectionTimeouts = 4

// maybeSendSnapshot sends the member our snapshot because the entries it
// needs are compacted. It reports whether it sent one.
func (r *raft) maybeSendSnapshot(to uint64, pr *progress) bool {
	if !pr.recentActive {
		return false // do not ship a snapshot to a member that may be down
	}
	snap, err := r.log.snapshot()
	if err != nil || snap.IsEmpty() {
		// ErrSnapshotTemporarilyUnavailable: the application is making
		// one; a later heartbeat response retries.
		return false
	}
	pr.becomeSnapshot(snap.Meta.Index)
	r.send(Message{To: to, Type: MsgSnap, Snapshot: &snap})
	return true
}

// tickSnapshots gives up on snapshots unacknowledged for too long.
func (r *raft) tickSnapshots() {
	limit := snapshotTimeoutElectionTimeouts * r.electionTicks
	for _, id := range r.trk.ids() {
		pr := r.trk.progress[id]
		if pr.state != ProgressSnapshot {
			continue
		}
		pr.snapshotElapsedTicks++
		if pr.snapshotElapsedTicks >= limit {
			r.reportSnapshot(id, false)
		}
	}
}

// reportSnapshot is the application's word on a snapshot it sent to id.
// Either way the leader probes again; on failure it forgets the snapshot.
func (r *raft) reportSnapshot(id uint64, ok bool) {
	if r.state != StateLeader {
		return
	}
	pr := r.trk.progress[id]
	if pr == nil || pr.state != ProgressSnapshot {
		return
	}
	if !ok {
		pr.pendingSnapshot = 0
	}
	pr.becomeProbe()
	// Wait for a heartbeat response before the next probe: the member may
	// still be installing the snapshot.
	pr.probeSent = true
}

// reportUnreachable: the transport could not reach id; stop streaming to
// it and probe instead.
func (r *raft) reportUnreachable(id uint64) {
	if r.state != StateLeader {
		return
	}
	if pr := r.trk.progress[id]; pr != nil && pr.state == ProgressReplicate {
		pr.becomeProbe()
	}
}

// handleSnapshot is a follower's answer to MsgSnap.
func (r *raft) handleSnapshot(m Message) {
	if m.Snapshot == nil {
		return
	}
	if r.restore(*m.Snapshot) {
		r.send(Message{To: m.From, Type: MsgAppResp, Index: r.log.lastIndex()})
		return
	}
	r.send(Message{To: m.From, Type: MsgAppResp, Index: r.log.committed})
}

// restore installs snapshot s if it is news. It reports whether it did.
func (r *raft) restore(s Snapshot) bool {
	if s.Meta.Index <= r.log.committed {
		return false
	}
	// The snapshot's configuration may not include us yet: a member added
	// after the snapshot was taken learns of its own addition from the
	// entries that follow. Until then it is not promotable, like a removed
	// member, which nothing here relies on.
	if r.log.matchTerm(s.Meta.Index, s.Meta.Term) {
		// We hold the snapshot's last entry, so everything up to it:
		// just commit it.
		r.log.commitTo(s.Meta.Index)
		return false
	}
	r.log.restore(s)
	r.trk = newTracker(s.Meta.ConfState)
	r.resetProgress()
	return true
}
