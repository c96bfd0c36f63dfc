package node

import (
	"slices"

	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/node/replica"
)

// RaftHealth is one Raft group's replica on this broker as Raft itself
// sees it, for the web UI's Raft health page. It is read-only: it touches
// no file and changes no Raft state.
type RaftHealth struct {
	Controller bool // the controller group (Topic and Partition unset)
	Topic      string
	Partition  int32
	// Term is the replica's Raft term, Lead the leader it knows (0: none),
	// Role its Raft role (StateLeader, StateFollower...).
	Term, Lead uint64
	Role       string
	// Commit, Applied, FirstIndex and LastIndex are Raft log indexes
	// (entries, not Kafka offsets).
	Commit, Applied, FirstIndex, LastIndex uint64
	Voters, Learners                       []uint64 // the membership this replica knows
	// Fenced: a vote fence is in force on this replica (it lost entries
	// it may have acknowledged and votes only for logs past the fence);
	// Damaged: it is being repaired from its peers.
	Fenced, Damaged bool
	// Progress is the leader's view of every member (sorted by ID), on
	// the leader only.
	Progress []consensus.PeerProgress
}

// RaftHealth lists this broker's Raft replicas: the controller group's
// first (when this broker is a member), then partitions by topic and
// partition.
func (r *Reactor) RaftHealth() []RaftHealth {
	var out []RaftHealth
	if r.ctl != nil && r.ctl.rep != nil {
		h := raftHealthOf(r.ctl.rep)
		h.Controller, h.Fenced = true, r.fenced(uint64(r.ctl.rep.Group))
		out = append(out, h)
	}
	var parts []RaftHealth
	for _, g := range sortedKeys(r.parts) {
		p := r.parts[g]
		rep := p.Replica()
		if rep == nil {
			continue
		}
		h := raftHealthOf(rep)
		h.Topic, h.Partition, h.Fenced = p.Topic, p.Index, r.fenced(g)
		parts = append(parts, h)
	}
	slices.SortFunc(parts, func(a, b RaftHealth) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition) - int(b.Partition)
	})
	return append(out, parts...)
}

func raftHealthOf(rep *replica.Replica) RaftHealth {
	st := rep.Status()
	return RaftHealth{Term: st.Term, Lead: st.Lead, Role: st.RaftState.String(),
		Commit: st.Commit, Applied: rep.Applied(), FirstIndex: rep.FirstIndex(), LastIndex: rep.LastIndex(),
		Voters: slices.Clone(st.Config.Voters), Learners: slices.Clone(st.Config.Learners),
		Damaged: rep.Damaged(), Progress: st.Progress}
}
