package consensus

// Test-only access for the external test package (consensus_test).

// DescribeMessage prints m compactly, for traces.
func DescribeMessage(m Message) string { return describeMessage(m) }
