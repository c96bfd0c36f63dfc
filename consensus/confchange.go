package consensus

import (
	"errors"
	"slices"

	"github.com/floe-broker/floe/internal/plant"
)

// ErrInvalidConfChange rejects a malformed configuration change: an unknown
// type, node id 0, or one that would leave the group without voters.
var ErrInvalidConfChange = errors.New("consensus: invalid configuration change")

// Membership changes one server at a time and takes effect when the
// application applies the committed entry (ApplyConfChange). A leader
// accepts a new change only once the previous one is applied, and not
// before the first entry of its own term is applied either, so at most one
// change is ever in flight and any two successive majorities overlap. A
// member's applied membership can still lag its log by more changes than
// one, so candidates and leaders count votes and acknowledgements in the
// newest membership of their log (newestconf.go).

// proposeConfChange appends a configuration change on the leader.
func (r *raft) proposeConfChange(cc ConfChange) (uint64, uint64, error) {
	if r.state != StateLeader {
		return 0, 0, ErrNotLeader
	}
	if _, _, err := nextConfig(r.trk.voters, r.trk.learners, cc); err != nil {
		return 0, 0, err
	}
	if r.pendingConfIndex > r.log.applied && !plant.Enabled(plant.ConfTwoPending) {
		return 0, 0, ErrProposalDropped
	}
	index, term, err := r.propose(Entry{Type: EntryConfChange, Data: cc.Marshal()})
	if err == nil {
		r.pendingConfIndex = index
		// Our own commits need the new membership's majority from now
		// on (newestconf.go).
		r.logConfAfter(cc)
	}
	return index, term, err
}

// nextConfig computes the membership after cc.
func nextConfig(voters, learners []uint64, cc ConfChange) ([]uint64, []uint64, error) {
	if cc.NodeID == 0 {
		return nil, nil, ErrInvalidConfChange
	}
	voters = slices.DeleteFunc(slices.Clone(voters), func(id uint64) bool { return id == cc.NodeID })
	learners = slices.DeleteFunc(slices.Clone(learners), func(id uint64) bool { return id == cc.NodeID })
	switch cc.Type {
	case ConfAddVoter:
		voters = append(voters, cc.NodeID)
	case ConfAddLearner:
		learners = append(learners, cc.NodeID)
	case ConfRemove:
	default:
		return nil, nil, ErrInvalidConfChange
	}
	if len(voters) == 0 {
		return nil, nil, ErrInvalidConfChange
	}
	slices.Sort(voters)
	slices.Sort(learners)
	return voters, learners, nil
}

// applyConfChange switches to the membership after cc, once the
// application applied its entry. An invalid change leaves it as it is.
func (r *raft) applyConfChange(cc ConfChange) ConfState {
	voters, learners, err := nextConfig(r.trk.voters, r.trk.learners, cc)
	if err != nil {
		return r.trk.confState()
	}
	r.switchConfig(voters, learners)
	if r.state == StateLeader {
		r.afterLeaderConfChange()
	}
	return r.trk.confState()
}

// switchConfig installs a membership, keeping the progress of members that
// stay. New members start probing from our last index, and count as active
// so that check-quorum gives them an election timeout to answer.
func (r *raft) switchConfig(voters, learners []uint64) {
	old := r.trk.progress
	r.trk.voters, r.trk.learners = voters, learners
	r.trk.progress = make(map[uint64]*progress, len(voters)+len(learners))
	for _, id := range r.trk.ids() {
		pr := old[id]
		if pr == nil {
			pr = &progress{
				next:         r.log.lastIndex() + 1,
				inflights:    newInflights(r.maxInflightMsgs, r.maxInflightBytes),
				recentActive: true,
			}
			if id == r.id {
				pr.match = r.log.persistedIndex()
			}
		}
		pr.isLearner = r.trk.isLearner(id)
		r.trk.progress[id] = pr
	}
	for id := range r.trk.votes { //floe:unordered deleting from a set
		if !r.trk.votesIn(id) {
			delete(r.trk.votes, id)
		}
	}
}

// afterLeaderConfChange lets the new quorum commit, and steps down if we
// are no longer a voter (the removed leader stops once the change is
// committed and applied; the others elect a successor).
func (r *raft) afterLeaderConfChange() {
	if r.maybeCommit() {
		r.bcastAppend()
	} else {
		for _, id := range r.trk.ids() {
			if id != r.id {
				r.maybeSendAppend(id, false)
			}
		}
	}
	if r.leadTransferee != 0 && !r.trk.isVoter(r.leadTransferee) {
		r.leadTransferee = 0
	}
	if !r.trk.isVoter(r.id) {
		// Tell everyone the commit index once more, then stand aside.
		r.bcastHeartbeat(nil)
		r.becomeFollower(r.term, 0)
	}
}
