package consensus

import (
	"slices"
)

// voteResult is the outcome of counting votes (or acknowledgements).
type voteResult uint8

const (
	votePending voteResult = iota
	voteLost
	voteWon
)

// tracker holds a group's membership and, on a leader, every member's
// progress; on a candidate, the votes received.
//
// Invariant: voters and learners are sorted, disjoint, without duplicates,
// and progress has exactly one entry per id in them. Maps here are only
// looked up; every loop runs over the sorted slices.
type tracker struct {
	voters   []uint64
	learners []uint64
	progress map[uint64]*progress
	votes    map[uint64]bool
}

func newTracker(cs ConfState) tracker {
	t := tracker{progress: map[uint64]*progress{}, votes: map[uint64]bool{}}
	t.voters = sortedUnique(cs.Voters)
	t.learners = slices.DeleteFunc(sortedUnique(cs.Learners), func(id uint64) bool {
		_, isVoter := slices.BinarySearch(t.voters, id)
		return isVoter
	})
	return t
}

func sortedUnique(ids []uint64) []uint64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	out = slices.Compact(out)
	return slices.DeleteFunc(out, func(id uint64) bool { return id == 0 })
}

// confState reports the membership.
func (t *tracker) confState() ConfState {
	return ConfState{Voters: slices.Clone(t.voters), Learners: slices.Clone(t.learners)}
}

// ids are all members, sorted.
func (t *tracker) ids() []uint64 {
	all := make([]uint64, 0, len(t.voters)+len(t.learners))
	all = append(all, t.voters...)
	all = append(all, t.learners...)
	slices.Sort(all)
	return all
}

func (t *tracker) isVoter(id uint64) bool {
	_, ok := slices.BinarySearch(t.voters, id)
	return ok
}

func (t *tracker) isLearner(id uint64) bool {
	_, ok := slices.BinarySearch(t.learners, id)
	return ok
}

// committedIndex is the highest index durable on a majority of voters.
func (t *tracker) committedIndex() uint64 {
	return majorityIndex(t.voters, func(id uint64) uint64 {
		if pr := t.progress[id]; pr != nil {
			return pr.match
		}
		return 0
	})
}

func (t *tracker) resetVotes() { clear(t.votes) }

// recordVote notes id's vote; the first vote from an id counts.
func (t *tracker) recordVote(id uint64, granted bool) {
	if _, seen := t.votes[id]; !seen {
		t.votes[id] = granted
	}
}

// tallyVotes counts the votes recorded and decides the election.
func (t *tracker) tallyVotes() (granted, rejected int, result voteResult) {
	for _, id := range t.voters {
		v, seen := t.votes[id]
		switch {
		case !seen:
		case v:
			granted++
		default:
			rejected++
		}
	}
	return granted, rejected, majorityVote(t.voters, t.votes)
}

// quorumActive says whether a majority of voters was heard from recently.
func (t *tracker) quorumActive() bool {
	active := map[uint64]bool{}
	for _, id := range t.voters {
		if pr := t.progress[id]; pr != nil {
			active[id] = pr.recentActive
		}
	}
	return majorityVote(t.voters, active) == voteWon
}

// majorityIndex returns the largest index that a majority of voters have
// acknowledged: the (n/2+1)-th largest of their acknowledgements. With no
// voters nothing is acknowledged.
func majorityIndex(voters []uint64, ack func(id uint64) uint64) uint64 {
	n := len(voters)
	if n == 0 {
		return 0
	}
	acks := make([]uint64, n)
	for i, id := range voters {
		acks[i] = ack(id)
	}
	slices.Sort(acks)
	// acks[n-q] is acknowledged by the q largest; q = n/2+1.
	return acks[n-(n/2+1)]
}

// majorityVote decides an election among voters given the votes so far
// (true: granted, false: rejected, missing: not yet answered). With no
// voters nobody can win.
func majorityVote(voters []uint64, votes map[uint64]bool) voteResult {
	if len(voters) == 0 {
		return voteLost
	}
	q := len(voters)/2 + 1
	granted, missing := 0, 0
	for _, id := range voters {
		v, seen := votes[id]
		switch {
		case !seen:
			missing++
		case v:
			granted++
		}
	}
	switch {
	case granted >= q:
		return voteWon
	case granted+missing >= q:
		return votePending
	default:
		return voteLost
	}
}
