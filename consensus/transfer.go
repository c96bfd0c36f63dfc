package consensus

// transferLeader starts handing leadership to member to: once to's log
// matches ours, it is told to campaign at once (MsgTimeoutNow). Proposals
// are refused meanwhile; the transfer is abandoned after an election
// timeout.
func (r *raft) transferLeader(to uint64) {
	if r.state != StateLeader {
		return
	}
	pr := r.trk.progress[to]
	if pr == nil || pr.isLearner || to == r.id {
		return
	}
	if r.leadTransferee == to {
		return // already under way
	}
	r.leadTransferee = to
	r.electionElapsedTicks = 0
	if pr.match == r.log.lastIndex() {
		r.sendTimeoutNow(to)
		return
	}
	r.sendAppend(to)
}

func (r *raft) sendTimeoutNow(to uint64) {
	r.send(Message{To: to, Type: MsgTimeoutNow})
}
