package consensus

// transferLeader starts handing leadership to member to: once to's log
// matches ours, it is told to campaign at once (MsgTimeoutNow). Proposals
// are refused meanwhile; the transfer is abandoned after an election
// timeout (and the leader steps down if it had sent MsgTimeoutNow).
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

// sendTimeoutNow tells the transferee to campaign at once. Its campaign is
// marked as a transfer, and voters grant it although they heard from us
// within an election timeout: it breaks the promise read leases rest on.
// The message may be delayed and arrive at any time in this term, so from
// now on we hold no read lease in this term (Status.TimeoutNowSent), and if
// the transfer has not finished after an election timeout we step down
// instead of leading on without a lease (tickHeartbeat).
func (r *raft) sendTimeoutNow(to uint64) {
	r.timeoutNowSent = true
	r.send(Message{To: to, Type: MsgTimeoutNow})
}
