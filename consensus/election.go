package consensus

import "github.com/floe-broker/floe/internal/plant"

// campaignType says how an election starts.
type campaignType uint8

const (
	campaignPreElection campaignType = iota // pre-vote first (Config.PreVote)
	campaignElection                        // straight to a real vote
	campaignTransfer                        // leader transfer: skip pre-vote and leases
)

// campaignTransferContext marks vote requests of a leader transfer: voters
// grant them even while they believe the old leader is alive.
const campaignTransferContext = "CampaignTransfer"

func (r *raft) defaultCampaign() campaignType {
	if r.preVote {
		return campaignPreElection
	}
	return campaignElection
}

// hup starts an election if this member may, and reports whether it did.
func (r *raft) hup(t campaignType) bool {
	if r.state == StateLeader || !r.promotable() || r.fenceBlocksCampaign() {
		return false
	}
	if r.quietTicks > 0 && t != campaignTransfer {
		// Our vote for ourselves would break the promise inLease keeps
		// after a restart. (Timers never fire this early: an election
		// timeout is at least electionTicks.)
		return false
	}
	// A committed but unapplied configuration change may remove us or
	// change the quorum; wait until it is applied.
	if r.hasUnappliedConfChanges() {
		return false
	}
	// Votes count in the newest membership of our log too (newestconf.go).
	if err := r.learnNewestConf(); err != nil {
		return false
	}
	r.campaign(t)
	return true
}

func (r *raft) hasUnappliedConfChanges() bool {
	if r.log.applied >= r.log.committed {
		return false
	}
	has, err := r.log.hasType(r.log.applied+1, r.log.committed+1, EntryConfChange)
	return has || err != nil // an error: cannot tell; stay safe
}

// campaign asks every voter for its vote (or pre-vote).
func (r *raft) campaign(t campaignType) {
	var term uint64
	var voteMsg MessageType
	if t == campaignPreElection {
		r.becomePreCandidate()
		voteMsg = MsgPreVote
		term = r.term + 1 // the term we would campaign in
	} else {
		r.becomeCandidate()
		voteMsg = MsgVote
		term = r.term
	}
	if _, _, res := r.poll(r.id, true); res == voteWon {
		// A single voter wins at once.
		r.winElection(t)
		return
	}
	var ctx []byte
	if t == campaignTransfer {
		ctx = []byte(campaignTransferContext)
	}
	lastIndex, lastTerm := r.log.lastIndex(), r.log.lastTerm()
	for _, id := range r.trk.electorate() {
		if id == r.id {
			continue
		}
		r.send(Message{To: id, Term: term, Type: voteMsg, Index: lastIndex, LogTerm: lastTerm, Context: ctx})
	}
}

// winElection moves on from a won pre-vote or vote.
func (r *raft) winElection(t campaignType) {
	if t == campaignPreElection {
		r.campaign(campaignElection)
		return
	}
	r.becomeLeader()
	r.bcastAppend()
}

func (r *raft) poll(id uint64, granted bool) (int, int, voteResult) {
	r.trk.recordVote(id, granted)
	return r.trk.tallyVotes()
}

// handleVoteRequest answers a MsgVote or MsgPreVote at our term or later.
func (r *raft) handleVoteRequest(m Message) {
	respType := MsgVoteResp
	if m.Type == MsgPreVote {
		respType = MsgPreVoteResp
	}
	// We may vote if we already voted for this candidate, or have not voted
	// and know of no leader this term, or it is a pre-vote for a later term.
	canVote := r.vote == m.From ||
		(r.vote == 0 && r.lead == 0) ||
		(m.Type == MsgPreVote && m.Term > r.term)
	// Raft's election restriction: never vote for a log behind ours.
	upToDate := r.log.isUpToDate(m.Index, m.LogTerm)
	if plant.Enabled(plant.VoteWithoutLogCheck) {
		upToDate = true
	}
	// A fenced member votes as if it still held the log it lost (fence.go).
	fenceAdmits := r.fenceAdmits(m.Index, m.LogTerm)
	if !canVote || !upToDate || !fenceAdmits {
		r.send(Message{To: m.From, Term: r.term, Type: respType, Reject: true})
		return
	}
	// A grant carries the candidate's term, so a pre-vote grant is not
	// mistaken for a message from a stale term.
	r.send(Message{To: m.From, Term: m.Term, Type: respType})
	if m.Type == MsgVote {
		r.electionElapsedTicks = 0
		r.vote = m.From
	}
}

// stepCandidate handles messages as a (pre-)candidate.
func (r *raft) stepCandidate(m Message) {
	myRespType := MsgVoteResp
	campaign := campaignElection
	if r.state == StatePreCandidate {
		myRespType = MsgPreVoteResp
		campaign = campaignPreElection
	}
	switch m.Type {
	case MsgApp:
		r.becomeFollower(m.Term, m.From) // someone won this term
		r.handleAppend(m)
	case MsgHeartbeat:
		r.becomeFollower(m.Term, m.From)
		r.handleHeartbeat(m)
	case MsgSnap:
		r.becomeFollower(m.Term, m.From)
		r.handleSnapshot(m)
	case myRespType:
		if !r.trk.votesIn(m.From) {
			return
		}
		_, _, res := r.poll(m.From, !m.Reject)
		switch res {
		case voteWon:
			r.winElection(campaign)
		case voteLost:
			// Pre-vote rejections may carry a higher term, handled by
			// step; a plain loss returns us to follower.
			r.becomeFollower(r.term, 0)
		}
	}
}
