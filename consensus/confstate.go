package consensus

// Apply returns the membership after cc, exactly as a RawNode applies it:
// a change Raft refuses (node id 0, an unknown type, one that would leave
// no voter) leaves cs as it is. Applications that replay configuration
// changes outside Raft (to describe the membership at a snapshot point) use
// this, so both agree.
func (cs ConfState) Apply(cc ConfChange) ConfState {
	voters, learners, err := nextConfig(cs.Voters, cs.Learners, cc)
	if err != nil {
		return cs
	}
	return ConfState{Voters: voters, Learners: learners}
}
