package consensus_test

import (
	"errors"
	"fmt"

	"github.com/floe-broker/floe/consensus"
)

// checker holds what the cluster has done so far and checks Raft's safety
// properties after every step:
//
//   - election safety: at most one leader per term;
//   - log matching: two persisted logs with an entry of the same index and
//     term hold the same entries up to it (compared by prefix hash, over
//     every log ever persisted, not only the current ones);
//   - leader completeness: a leader of term T holds every entry committed
//     in a term before T;
//   - state machine safety: no two members apply different entries at one
//     index (compared by the applied state's hash).
type checker struct {
	leaders   map[uint64]uint64     // term -> leader
	logHashes map[[2]uint64]uint64  // (index, term) -> prefix hash
	committed map[uint64]commitInfo // index -> the entry committed there
	maxCommit uint64
	applied   map[uint64]uint64 // index -> state hash after applying it
}

type commitInfo struct {
	term uint64
	// commitTerm is the earliest term in which a member reported the entry
	// committed: leaders of later terms must hold it.
	commitTerm uint64
}

// violation is a broken safety property.
type violation struct{ msg string }

func (v *violation) Error() string { return v.msg }

func violationf(format string, args ...any) error {
	return &violation{msg: fmt.Sprintf(format, args...)}
}

func newChecker() *checker {
	return &checker{
		leaders:   map[uint64]uint64{},
		logHashes: map[[2]uint64]uint64{},
		committed: map[uint64]commitInfo{},
		applied:   map[uint64]uint64{},
	}
}

// persisted checks entries (and their prefix hashes) a member just made
// durable against every log seen before.
func (c *checker) persisted(id uint64, index, term, hash uint64) error {
	key := [2]uint64{index, term}
	if prev, ok := c.logHashes[key]; ok && prev != hash {
		return violationf("log matching: node %d holds entry %d/%d with a different history than another log held", id, term, index)
	}
	c.logHashes[key] = hash
	return nil
}

// appliedEntry checks the state a member reached by applying index.
func (c *checker) appliedEntry(id, index, stateHash uint64) error {
	if prev, ok := c.applied[index]; ok && prev != stateHash {
		return violationf("state machine safety: node %d applied a different entry at index %d than another node", id, index)
	}
	c.applied[index] = stateHash
	return nil
}

// observe checks a member's role and commit index after a step. termAt
// reads its log (nil error, or ErrCompacted for entries behind a snapshot).
func (c *checker) observe(id uint64, st consensus.Status, prevCommit uint64, termAt func(uint64) (uint64, error)) error {
	if st.RaftState == consensus.StateLeader {
		if lead, ok := c.leaders[st.Term]; ok && lead != id {
			return violationf("election safety: nodes %d and %d both leaders of term %d", lead, id, st.Term)
		}
		if _, seen := c.leaders[st.Term]; !seen {
			c.leaders[st.Term] = id
			if err := c.leaderComplete(id, st.Term, termAt); err != nil {
				return err
			}
		}
	}
	for i := prevCommit + 1; i <= st.Commit; i++ {
		t, err := termAt(i)
		if errors.Is(err, consensus.ErrCompacted) {
			continue // behind a snapshot: its state hash is checked instead
		}
		if err != nil {
			return violationf("node %d reports index %d committed but cannot read it: %v", id, i, err)
		}
		info, ok := c.committed[i]
		switch {
		case !ok:
			c.committed[i] = commitInfo{term: t, commitTerm: st.Term}
			c.maxCommit = max(c.maxCommit, i)
		case info.term != t:
			return violationf("state machine safety: index %d committed with term %d, and on node %d with term %d", i, info.term, id, t)
		case st.Term < info.commitTerm:
			info.commitTerm = st.Term
			c.committed[i] = info
		}
	}
	return nil
}

// leaderComplete: the new leader of term holds every entry committed in an
// earlier term.
func (c *checker) leaderComplete(id, term uint64, termAt func(uint64) (uint64, error)) error {
	for i := uint64(1); i <= c.maxCommit; i++ {
		info, ok := c.committed[i]
		if !ok || info.commitTerm >= term {
			continue
		}
		t, err := termAt(i)
		if errors.Is(err, consensus.ErrCompacted) {
			continue
		}
		if err != nil || t != info.term {
			return violationf("leader completeness: node %d leads term %d without entry %d/%d committed in term %d",
				id, term, info.term, i, info.commitTerm)
		}
	}
	return nil
}
