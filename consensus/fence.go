package consensus

// A vote fence protects Raft's safety when a member loses entries it had
// acknowledged — a checksum caught a flipped bit, and the application
// discarded the damaged entry and everything after it so the leader can
// send them again. Raft assumes a member never forgets what it
// acknowledged: a committed entry may be held by a bare majority that
// includes this member, and if the member then voted for a candidate that
// lacks the entry (its shortened log now looks no more up to date than the
// candidate's), that candidate could win and the committed entry be lost.
// So the member, until its log again reaches the last index it held before
// discarding (the fence), grants no vote and starts no election. It still
// accepts entries from the leader, which is how the fence is lifted.
// (Alagappan et al., "Protocol-Aware Recovery for Consensus-Based
// Storage", FAST 2018, describe the problem and this kind of remedy.)

// lostEntriesContext marks a fenced member's refusal of an append: the
// leader lowers its record of what the member holds (step_leader.go).
const lostEntriesContext = "LostEntries"

// fenced reports whether the member must not vote or campaign.
func (r *raft) fenced() bool {
	if r.voteFence == 0 {
		return false
	}
	if r.log.lastIndex() >= r.voteFence {
		r.voteFence = 0
		return false
	}
	return true
}

// SetVoteFence records that this member discarded entries up to index:
// until its log reaches index again it neither votes nor campaigns. The
// caller must make the fence durable before it discards anything (and pass
// it back as Config.VoteFence after a restart).
func (rn *RawNode) SetVoteFence(index uint64) {
	if index > rn.raft.voteFence {
		rn.raft.voteFence = index
	}
}

// VoteFence returns the fence still in force, or 0 once the log has reached
// it (the caller may then drop its durable record of it).
func (rn *RawNode) VoteFence() uint64 {
	rn.raft.fenced()
	return rn.raft.voteFence
}
