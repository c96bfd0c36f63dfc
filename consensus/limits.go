package consensus

// SetMessageLimits changes Config's MaxSizePerMsg and MaxInflightMsgs on a
// running member (MaxInflightMsgs 0 means 256, as in Config): the next
// append a leader sends carries at most maxSizePerMsg entry bytes (always
// at least one entry), and at most maxInflightMsgs appends may be
// unacknowledged per member. Appends already in flight stay counted; a
// lower cap only holds back the next ones until enough are acknowledged.
// Nothing else changes, so it is safe at any time: the limits are flow
// control, not part of Raft's state.
func (rn *RawNode) SetMessageLimits(maxSizePerMsg uint64, maxInflightMsgs int) {
	r := rn.raft
	if maxInflightMsgs <= 0 {
		maxInflightMsgs = defaultMaxInflightMsgs
	}
	r.maxMsgBytes, r.maxInflightMsgs = maxSizePerMsg, maxInflightMsgs
	for _, id := range r.trk.ids() {
		if pr := r.trk.progress[id]; pr != nil {
			pr.inflights.sizeMax = maxInflightMsgs
		}
	}
}
