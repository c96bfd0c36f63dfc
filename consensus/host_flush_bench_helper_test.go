package consensus

// benchFlushWithHeader flushes as the node's reactor does (node/ready.go
// flush): frames with a one-byte header in front.
func benchFlushWithHeader(h *Host) []Outbound {
	return h.FlushPrefixed([]byte{1})
}
