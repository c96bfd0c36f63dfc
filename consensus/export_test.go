package consensus

// Test-only access for the external test package (consensus_test).

// DescribeMessage prints m compactly, for traces.
func DescribeMessage(m Message) string { return describeMessage(m) }

// RunVoterModel runs one seed of TestVoterChangeModel (planted_test.go).
func RunVoterModel(seed int64, steps int) (int, error) {
	st, err := runVoterModel(seed, steps)
	return st.allowed, err
}
