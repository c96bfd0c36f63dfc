package consensus

import "errors"

// RawNode is one member of one Raft group, driven by its caller: Step,
// Tick and Propose feed it; Ready and Advance drain it. It is not safe for
// concurrent use; the node's reactor owns it.
type RawNode struct {
	raft          *raft
	prevSoftState SoftState
	prevHardState HardState
	// outstanding counts the Readys handed out and not yet advanced. At
	// most Pipeline of them (SetPipeline; 1 unless raised) are: the next
	// Ready holds only what the earlier ones did not (entries from the
	// unstable part's inProgress, committed entries after applying), and
	// Advance must be called for them in the order they were handed out.
	outstanding int
	pipeline    int
}

// SetPipeline sets how many Readys may be outstanding at once (at least
// 1). With more than one, the caller writes Ready N+1 while N's fsync is
// in flight, and must make N+1's write durable only with or after N's:
// Advance(N+1) reports both durable (docs/architecture.md, "Durability
// ordering"). Etcd's raft does the same with AsyncStorageWrites.
func (rn *RawNode) SetPipeline(k int) { rn.pipeline = max(k, 1) }

// Outstanding returns how many Readys are handed out and not advanced.
func (rn *RawNode) Outstanding() int { return rn.outstanding }

// HasPendingSnapshot reports whether the next Ready would carry a
// snapshot to install.
func (rn *RawNode) HasPendingSnapshot() bool { return rn.raft.log.unstable.pendingSnapshot() != nil }

// SnapshotInProgress reports whether an outstanding Ready carries a
// snapshot.
func (rn *RawNode) SnapshotInProgress() bool { return rn.raft.log.unstable.snapshotInProgress }

func (rn *RawNode) full() bool { return rn.outstanding >= max(rn.pipeline, 1) }

// NewRawNode starts a member from cfg.Storage's state, as a follower.
func NewRawNode(cfg Config) (*RawNode, error) {
	r, err := newRaft(cfg)
	if err != nil {
		return nil, err
	}
	rn := &RawNode{raft: r}
	rn.prevSoftState = r.softState()
	rn.prevHardState = r.hardState()
	return rn, nil
}

// Tick advances the logical clock by one tick.
func (rn *RawNode) Tick() { rn.raft.tick() }

// Campaign makes this member start an election now (with pre-vote if
// configured). It does nothing on a leader or a non-voter, on a member
// behind its vote fence (fence.go), nor, with CheckQuorum, during the
// election timeout after a restart (Config.Fresh; raft.go inLease).
func (rn *RawNode) Campaign() { rn.raft.hup(rn.raft.defaultCampaign()) }

// Step feeds a message from another member of the group. Malformed
// messages are refused with an error and change nothing.
func (rn *RawNode) Step(m Message) error {
	if err := validateMessage(m); err != nil {
		return err
	}
	if isResponse(m.Type) && rn.raft.trk.progress[m.From] == nil {
		return ErrStepPeerNotFound
	}
	rn.raft.step(m)
	return nil
}

// Propose appends data on the leader and returns the new entry's index and
// term (the term is the Kafka leader epoch). Elsewhere it fails with
// ErrNotLeader; ErrProposalDropped when flow control or a leader transfer
// refuses it. The RawNode keeps data; the caller must not modify it.
func (rn *RawNode) Propose(typ EntryType, data []byte) (index, term uint64, err error) {
	if typ == EntryConfChange {
		cc, err := UnmarshalConfChange(data)
		if err != nil {
			return 0, 0, ErrInvalidConfChange
		}
		return rn.ProposeConfChange(cc)
	}
	return rn.raft.propose(Entry{Type: typ, Data: data})
}

// ProposeConfChange proposes a single-server membership change. It is
// refused with ErrProposalDropped while an earlier change is not applied.
func (rn *RawNode) ProposeConfChange(cc ConfChange) (index, term uint64, err error) {
	return rn.raft.proposeConfChange(cc)
}

// ApplyConfChange must be called after applying a committed
// EntryConfChange; it returns the new membership, which the caller persists
// with its applied state.
func (rn *RawNode) ApplyConfChange(cc ConfChange) ConfState {
	return rn.raft.applyConfChange(cc)
}

// TransferLeader asks the leader to hand leadership to member to. It does
// nothing elsewhere.
func (rn *RawNode) TransferLeader(to uint64) { rn.raft.transferLeader(to) }

// StepDown makes a leader a follower in its own term, with no leader known
// (it does nothing elsewhere). The others elect a leader once their
// election timeouts pass, as after a leader's crash; this member may
// campaign again like any follower. For a leader that cannot lead: one
// whose log is damaged where a follower still needs it (node/repair.go),
// so that no transfer can ever catch a follower up.
func (rn *RawNode) StepDown() {
	if rn.raft.state == StateLeader {
		rn.raft.becomeFollower(rn.raft.term, 0)
	}
}

// ReadIndex requests a linearizable read tagged ctx (non-empty, unique).
// The answer is a ReadState in a later Ready. It is dropped if no leader is
// known or leadership changes first; callers retry on a timeout.
func (rn *RawNode) ReadIndex(ctx []byte) { rn.raft.readIndex(ctx) }

// ReportUnreachable tells the leader that a message to id was lost.
func (rn *RawNode) ReportUnreachable(id uint64) { rn.raft.reportUnreachable(id) }

// ReportSnapshot tells the leader whether the snapshot it sent to id was
// delivered. Without a report, the leader retries after a few election
// timeouts.
func (rn *RawNode) ReportSnapshot(id uint64, ok bool) { rn.raft.reportSnapshot(id, ok) }

// HasReady says whether Ready has work, and fewer than the pipeline's
// Readys are outstanding.
func (rn *RawNode) HasReady() bool {
	if rn.full() {
		return false
	}
	r := rn.raft
	if r.softState() != rn.prevSoftState {
		return true
	}
	if hs := r.hardState(); hs != rn.prevHardState {
		return true
	}
	return r.log.unstable.pendingSnapshot() != nil ||
		len(r.log.unstableEntries()) > 0 ||
		len(r.msgs) > 0 || len(r.msgsAfterPersist) > 0 ||
		r.log.hasNextCommittedEnts() ||
		len(r.readStates) > 0
}

// Ready returns the work to do (see Ready's contract). While the
// pipeline's Readys are outstanding it returns an empty Ready.
func (rn *RawNode) Ready() Ready {
	if rn.full() {
		return Ready{}
	}
	r := rn.raft
	rd := Ready{
		Entries:              r.log.unstableEntries(),
		CommittedEntries:     r.log.nextCommittedEnts(),
		Messages:             r.msgs,
		MessagesAfterPersist: r.msgsAfterPersist,
		ReadStates:           r.readStates,
	}
	if ss := r.softState(); ss != rn.prevSoftState {
		rd.SoftState = &ss
		rn.prevSoftState = ss
	}
	if hs := r.hardState(); hs != rn.prevHardState {
		rd.HardState = hs
	}
	if s := r.log.unstable.pendingSnapshot(); s != nil {
		rd.Snapshot = *s
	}
	rd.MustSync = len(rd.Entries) > 0 || !rd.Snapshot.IsEmpty() ||
		(rd.HardState != HardState{} &&
			(rd.HardState.Term != rn.prevHardState.Term || rd.HardState.Vote != rn.prevHardState.Vote))
	r.msgs, r.msgsAfterPersist, r.readStates = nil, nil, nil
	// The Ready is accepted: what it carries is not handed out again
	// (the hard state is compared with what it carries from now on).
	if rd.HardState != (HardState{}) {
		rn.prevHardState = rd.HardState
	}
	r.log.unstable.accept()
	if n := len(rd.CommittedEntries); n > 0 {
		r.log.applying = rd.CommittedEntries[n-1].Index
	}
	rn.outstanding++
	return rd
}

// Advance acknowledges that rd, the oldest outstanding Ready, was
// handled: persisted (with every Ready before it), sent and applied.
func (rn *RawNode) Advance(rd Ready) {
	if rn.outstanding == 0 {
		return
	}
	rn.outstanding--
	r := rn.raft
	if !rd.Snapshot.IsEmpty() {
		r.log.stableSnapTo(rd.Snapshot.Meta.Index)
	}
	if n := len(rd.Entries); n > 0 {
		last := rd.Entries[n-1]
		r.log.stableTo(last.Index, last.Term)
	}
	if n := len(rd.CommittedEntries); n > 0 {
		r.log.appliedTo(rd.CommittedEntries[n-1].Index)
		r.reduceUncommittedBytes(rd.CommittedEntries)
	}
	r.onPersisted()
}

// errMalformed wraps every validation failure of Step.
var errMalformed = errors.New("consensus: malformed message")

// validateMessage checks what the state machine relies on, so a corrupt or
// hostile message is refused instead of breaking an invariant.
func validateMessage(m Message) error {
	if m.Type == MsgProp || m.Type == MsgSnapStatus || m.Type == MsgTransferLeader {
		return ErrStepLocalMsg
	}
	if m.Type < MsgApp || m.Type > MsgTermQueryResp {
		return errMalformed
	}
	if m.From == 0 {
		return errMalformed
	}
	switch m.Type {
	case MsgApp, MsgHeartbeat, MsgSnap, MsgTimeoutNow, MsgVote:
		if m.Term == 0 {
			return errMalformed
		}
	}
	if m.Type == MsgSnap && (m.Snapshot == nil || m.Snapshot.IsEmpty()) {
		return errMalformed
	}
	if m.Type == MsgApp {
		return validateAppendEntries(m)
	}
	if len(m.Entries) > 0 {
		return errMalformed
	}
	return nil
}

// validateAppendEntries: entries dense after m.Index, terms never
// decreasing, none from a term later than the message's.
func validateAppendEntries(m Message) error {
	prevTerm := m.LogTerm
	if prevTerm > m.Term {
		return errMalformed
	}
	for i, e := range m.Entries {
		if e.Index != m.Index+1+uint64(i) || e.Term < prevTerm || e.Term > m.Term {
			return errMalformed
		}
		prevTerm = e.Term
	}
	return nil
}

func isResponse(t MessageType) bool {
	switch t {
	case MsgAppResp, MsgVoteResp, MsgPreVoteResp, MsgHeartbeatResp:
		return true
	}
	return false
}
