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
// and progress has exactly one entry per id in ids() (voters, learners and
// logVoters). Maps here are only looked up; every loop runs over the
// sorted slices.
type tracker struct {
	// voters and learners are the applied membership.
	voters   []uint64
	learners []uint64
	// logConf, on a (pre-)candidate or leader, is the newest membership
	// in its log (newestconf.go), nil elsewhere; logVoters are its voters.
	// Every decision (an election won, an index committed, a read
	// confirmed, leadership kept by check-quorum) needs a majority of
	// logVoters while the log holds a newer membership, and of voters
	// otherwise.
	logConf   *ConfState
	logVoters []uint64
	progress  map[uint64]*progress
	votes     map[uint64]bool
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

// ids are all members, sorted: those of the applied membership and the
// voters of the newest one in the log.
func (t *tracker) ids() []uint64 {
	all := make([]uint64, 0, len(t.voters)+len(t.learners)+len(t.logVoters))
	all = append(all, t.voters...)
	all = append(all, t.learners...)
	all = append(all, t.logVoters...)
	slices.Sort(all)
	return slices.Compact(all)
}

// electorate are the members whose votes count, sorted: the voters of the
// applied membership and of the newest one in the log.
func (t *tracker) electorate() []uint64 {
	all := append(slices.Clone(t.voters), t.logVoters...)
	slices.Sort(all)
	return slices.Compact(all)
}

// votesIn says whether id's vote counts in an election.
func (t *tracker) votesIn(id uint64) bool {
	_, ok := slices.BinarySearch(t.logVoters, id)
	return ok || t.isVoter(id)
}

func (t *tracker) isVoter(id uint64) bool {
	_, ok := slices.BinarySearch(t.voters, id)
	return ok
}

func (t *tracker) isLearner(id uint64) bool {
	_, ok := slices.BinarySearch(t.learners, id)
	return ok
}

// committedIndex is the highest index durable on a majority of the
// deciding membership (decidingVoters).
func (t *tracker) committedIndex() uint64 {
	match := func(id uint64) uint64 {
		if pr := t.progress[id]; pr != nil {
			return pr.match
		}
		return 0
	}
	return majorityIndex(t.decidingVoters(), match)
}

// decidingVoters are the voters whose majority decides (an election won,
// an index committed, a read confirmed, check-quorum passed): those of the newest membership in the log while it
// differs from the applied one (the Raft dissertation's rule,
// newestconf.go), else the applied voters. Not a majority of both: once a
// removal is committed the removed member may be gone for good (a broker
// deletes its replica), and a member whose log holds the removal beyond
// its applied index would then need it (sim seed 1603770).
func (t *tracker) decidingVoters() []uint64 {
	if t.newerInLog() {
		return t.logVoters
	}
	return t.voters
}

func (t *tracker) resetVotes() { clear(t.votes) }

// recordVote notes id's vote; the first vote from an id counts.
func (t *tracker) recordVote(id uint64, granted bool) {
	if _, seen := t.votes[id]; !seen {
		t.votes[id] = granted
	}
}

// tallyVotes counts the votes recorded and decides the election: won with
// a majority of the deciding membership (decidingVoters).
func (t *tracker) tallyVotes() (granted, rejected int, _ voteResult) {
	for _, id := range t.electorate() {
		v, seen := t.votes[id]
		switch {
		case !seen:
		case v:
			granted++
		default:
			rejected++
		}
	}
	return granted, rejected, majorityVote(t.decidingVoters(), t.votes)
}

// newerInLog says whether the log holds a membership whose voters are not
// the applied ones (then decisions are taken in it).
func (t *tracker) newerInLog() bool {
	return t.logConf != nil && !slices.Equal(t.logVoters, t.voters)
}

// quorumActive says whether a majority of the deciding membership
// (decidingVoters) was heard from recently. A leader that counted its
// applied voters while its log held two changes beyond them stayed leader
// with a majority that another majority of the newest membership need not
// meet (newestconf.go, "Reads and check-quorum").
func (t *tracker) quorumActive() bool {
	voters := t.decidingVoters()
	active := map[uint64]bool{}
	for _, id := range voters {
		if pr := t.progress[id]; pr != nil {
			active[id] = pr.recentActive
		}
	}
	return majorityVote(voters, active) == voteWon
}

// soleDecider says whether id alone decides: the deciding membership is
// id alone, so no other member can be elected or commit.
func (t *tracker) soleDecider(id uint64) bool {
	d := t.decidingVoters()
	return len(d) == 1 && d[0] == id
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
