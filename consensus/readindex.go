package consensus

// ReadIndex (Raft thesis §6.4): a leader answers a read with its commit
// index once a heartbeat round shows it is still the leader; the reader
// then waits until that index is applied. No clock and no lease involved.

// readRequest is one ReadIndex request: from is the member that asked (us,
// or a follower that forwarded it), ctx the caller's unique tag.
type readRequest struct {
	from uint64
	ctx  []byte
}

// readIndexStatus is a request waiting for its heartbeat round.
type readIndexStatus struct {
	req   readRequest
	index uint64
	acks  map[uint64]bool
}

// readOnly queues the requests of one leader term in arrival order.
//
// Invariant: queue holds the keys of pending, in arrival order; the map is
// only looked up.
type readOnly struct {
	pending map[string]*readIndexStatus
	queue   []string
}

func newReadOnly() readOnly {
	return readOnly{pending: map[string]*readIndexStatus{}}
}

// handleReadIndex serves a ReadIndex request on the leader.
func (r *raft) handleReadIndex(req readRequest) {
	if len(req.ctx) == 0 {
		return // the tag identifies the request; none, no answer
	}
	// Until an entry of our term commits, our commit index may lag the
	// true one (entries of old terms we hold may be committed already).
	if !r.committedInCurrentTerm() {
		r.pendingReadIndex = append(r.pendingReadIndex, req)
		return
	}
	r.startReadIndex(req)
}

func (r *raft) committedInCurrentTerm() bool {
	return r.log.termOrZero(r.log.committed) == r.term
}

func (r *raft) startReadIndex(req readRequest) {
	if r.trk.soleDecider(r.id) {
		r.respondRead(req, r.log.committed) // we alone are the quorum
		return
	}
	key := string(req.ctx)
	if _, dup := r.readOnly.pending[key]; dup {
		// Asked again: the caller's retry after its round's heartbeats or
		// their answers were lost. Only a round tagged ctx confirms the
		// read (plain heartbeats carry none), so run a new one; ignoring
		// the retry left the read pending for the whole term (a node's
		// metadata barrier, resent under one id, never passed: simulator
		// seed 36, share records released and never redelivered).
		r.bcastHeartbeat(req.ctx)
		return
	}
	st := &readIndexStatus{req: req, index: r.log.committed, acks: map[uint64]bool{r.id: true}}
	r.readOnly.pending[key] = st
	r.readOnly.queue = append(r.readOnly.queue, key)
	r.bcastHeartbeat(req.ctx)
}

// releasePendingReadIndex starts the reads held back until this term's
// first commit.
func (r *raft) releasePendingReadIndex() {
	if len(r.pendingReadIndex) == 0 || !r.committedInCurrentTerm() {
		return
	}
	pending := r.pendingReadIndex
	r.pendingReadIndex = nil
	for _, req := range pending {
		r.startReadIndex(req)
	}
}

// handleReadIndexAck counts a heartbeat answer for the read tagged ctx.
// Once a quorum answered, that read and every read queued before it are
// confirmed (the same round proves leadership for all of them).
func (r *raft) handleReadIndexAck(from uint64, ctx []byte) {
	st, ok := r.readOnly.pending[string(ctx)]
	if !ok {
		return
	}
	st.acks[from] = true
	if majorityVote(r.trk.decidingVoters(), st.acks) != voteWon {
		return
	}
	n := 0
	for i, key := range r.readOnly.queue {
		if key == string(ctx) {
			n = i + 1
			break
		}
	}
	done := r.readOnly.queue[:n]
	r.readOnly.queue = append([]string(nil), r.readOnly.queue[n:]...)
	for _, key := range done {
		st := r.readOnly.pending[key]
		delete(r.readOnly.pending, key)
		r.respondRead(st.req, st.index)
	}
}

// respondRead delivers a confirmed read: to our own caller as a ReadState,
// or to the follower that forwarded it.
func (r *raft) respondRead(req readRequest, index uint64) {
	if req.from == r.id || req.from == 0 {
		r.readStates = append(r.readStates, ReadState{Index: index, RequestCtx: req.ctx})
		return
	}
	r.send(Message{To: req.from, Type: MsgReadIndexResp, Index: index, Context: req.ctx})
}

// readIndex is the entry point on any member.
func (r *raft) readIndex(ctx []byte) {
	switch {
	case r.state == StateLeader:
		r.handleReadIndex(readRequest{from: r.id, ctx: ctx})
	case r.lead != 0 && len(ctx) > 0:
		// Forward to the leader; its answer arrives as MsgReadIndexResp.
		r.send(Message{To: r.lead, Type: MsgReadIndex, Context: ctx})
	}
}
