package consensus

import (
	"errors"
	"fmt"
	"slices"
)

// Voter changes as an operator asks for them (Kafka's AddRaftVoter and
// RemoveRaftVoter, KIP-853): one voter in or out at a time, on the leader,
// checked against what the leader knows of its members. The change itself
// is an ordinary single-server change (confchange.go); this file only
// decides whether asking for it is safe now, so that every refusal comes
// with a reason and changes nothing.

// VoterOp is the change an operator asks for.
type VoterOp uint8

const (
	// VoterAdd promotes a learner that has caught up to a voter.
	VoterAdd VoterOp = iota + 1
	// VoterRemove demotes a voter to a learner: it keeps receiving the
	// log (a Floe broker needs the metadata) but no longer votes or
	// counts towards commits.
	VoterRemove
)

func (op VoterOp) String() string {
	switch op {
	case VoterAdd:
		return "add-voter"
	case VoterRemove:
		return "remove-voter"
	}
	return fmt.Sprintf("VoterOp(%d)", uint8(op))
}

// Reasons a voter change is refused. Each leaves the group as it was.
var (
	// ErrConfChangePending: an earlier change (or the leader's own first
	// entry of its term) is not applied yet; retry once it is.
	ErrConfChangePending = errors.New("consensus: a membership change is still in progress")
	ErrAlreadyVoter      = errors.New("consensus: already a voter")
	// ErrNotLearner: only a member that receives the log can be promoted
	// (a Floe broker joins the controller group as a learner first).
	ErrNotLearner = errors.New("consensus: not a learner of the group (it must join and catch up first)")
	// ErrNotCaughtUp: the learner is not live or lacks committed entries;
	// promoting it now would add a voter that cannot yet help commit.
	ErrNotCaughtUp = errors.New("consensus: the learner has not caught up with the leader")
	ErrNotVoter    = errors.New("consensus: not a voter")
	ErrLastVoter   = errors.New("consensus: cannot remove the last voter")
	// ErrBreaksQuorum: the voters left would not have a majority of live
	// members, so the group could no longer commit.
	ErrBreaksQuorum = errors.New("consensus: removing it would leave the remaining voters without a live quorum")
)

// PlanVoterChange returns the membership change that carries out op on
// member id, from a leader's Status, or why it must not be made now.
//
// Adding requires a learner that the leader heard from in this check-quorum
// period and whose log holds every committed entry (KIP-853 asks the same
// of a new voter). Removing requires that the voters left hold a majority
// of live members, counting the leader, and that at least one voter is
// left. A leader may remove itself: it steps down once the change is
// applied (afterLeaderConfChange).
func PlanVoterChange(st Status, op VoterOp, id uint64) (ConfChange, error) {
	if st.RaftState != StateLeader {
		return ConfChange{}, ErrNotLeader
	}
	if id == 0 {
		return ConfChange{}, ErrInvalidConfChange
	}
	if st.PendingConfIndex > st.Applied {
		return ConfChange{}, ErrConfChangePending
	}
	pr := peerProgress(st, id)
	switch op {
	case VoterAdd:
		switch {
		case slices.Contains(st.Config.Voters, id):
			return ConfChange{}, ErrAlreadyVoter
		case !slices.Contains(st.Config.Learners, id) || pr == nil:
			return ConfChange{}, ErrNotLearner
		case !pr.RecentActive || pr.Match < st.Commit:
			return ConfChange{}, ErrNotCaughtUp
		}
		return ConfChange{Type: ConfAddVoter, NodeID: id}, nil
	case VoterRemove:
		if !slices.Contains(st.Config.Voters, id) {
			return ConfChange{}, ErrNotVoter
		}
		left := slices.DeleteFunc(slices.Clone(st.Config.Voters), func(v uint64) bool { return v == id })
		if len(left) == 0 {
			return ConfChange{}, ErrLastVoter
		}
		live := 0
		for _, v := range left {
			if p := peerProgress(st, v); v == st.ID || p != nil && p.RecentActive {
				live++
			}
		}
		if live < len(left)/2+1 {
			return ConfChange{}, ErrBreaksQuorum
		}
		return ConfChange{Type: ConfAddLearner, NodeID: id}, nil
	}
	return ConfChange{}, ErrInvalidConfChange
}

func peerProgress(st Status, id uint64) *PeerProgress {
	for i := range st.Progress {
		if st.Progress[i].ID == id {
			return &st.Progress[i]
		}
	}
	return nil
}
