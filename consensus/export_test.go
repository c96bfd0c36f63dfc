package consensus

// Test-only access for the external test package (consensus_test).

// TermAt returns the term of entry i in the member's log, persisted or not.
func (rn *RawNode) TermAt(i uint64) (uint64, error) { return rn.raft.log.term(i) }

// DescribeMessage prints m compactly, for traces.
func DescribeMessage(m Message) string { return describeMessage(m) }
