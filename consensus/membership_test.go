package consensus_test

import (
	"slices"

	"github.com/floe-broker/floe/consensus"
)

// The membership workload: every so often the leader removes a voter
// (possibly itself), or adds a non-member back as a learner, or promotes a
// learner that has caught up. After the fault phase it only adds and
// promotes, until every node is a voter again.

// learnerCaughtUpEntries is how close to the leader's last index a learner
// must be to be promoted.
const learnerCaughtUpEntries = 10

func (c *cluster) scheduleMembership() {
	c.sim.After(c.randDuration(20*c.opts.tick), func() {
		if c.err != nil {
			return
		}
		c.scheduleMembership()
		if l := c.leader(); l != nil {
			c.changeMembership(l)
		}
	})
}

func (c *cluster) changeMembership(l *node) {
	st := l.rn.Status()
	var cc consensus.ConfChange
	switch {
	case c.caughtUpLearner(st) != 0:
		cc = consensus.ConfChange{Type: consensus.ConfAddVoter, NodeID: c.caughtUpLearner(st)}
	case c.nonMember(st) != 0 && (!c.faulty || c.rng.Intn(2) == 0):
		cc = consensus.ConfChange{Type: consensus.ConfAddLearner, NodeID: c.nonMember(st)}
	case c.faulty && len(st.Config.Voters) > c.minVoters():
		cc = consensus.ConfChange{Type: consensus.ConfRemove, NodeID: st.Config.Voters[c.rng.Intn(len(st.Config.Voters))]}
	default:
		return
	}
	if _, _, err := l.rn.ProposeConfChange(cc); err == nil {
		c.tracef("n%d proposes %v %d", l.id, cc.Type, cc.NodeID)
		l.stepDone()
	}
}

// minVoters keeps a majority of the nodes voting, so that the group does
// not depend on too few of them.
func (c *cluster) minVoters() int { return len(c.nodes)/2 + 1 }

func (c *cluster) caughtUpLearner(st consensus.Status) uint64 {
	for _, p := range st.Progress {
		if p.IsLearner && p.Match+learnerCaughtUpEntries >= st.LastIndex {
			return p.ID
		}
	}
	return 0
}

func (c *cluster) nonMember(st consensus.Status) uint64 {
	for _, n := range c.nodes {
		if !slices.Contains(st.Config.Voters, n.id) && !slices.Contains(st.Config.Learners, n.id) {
			return n.id
		}
	}
	return 0
}
