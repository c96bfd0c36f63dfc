package consensus

// ProgressState is how a leader currently replicates to one follower.
type ProgressState uint8

const (
	// ProgressProbe: the leader does not know where the follower's log
	// matches; it sends one MsgApp at a time and waits for the answer.
	ProgressProbe ProgressState = iota
	// ProgressReplicate: the logs match up to Match; the leader streams
	// appends optimistically, bounded by the inflight caps.
	ProgressReplicate
	// ProgressSnapshot: the follower needs entries the leader compacted; a
	// snapshot is on its way and appends wait for it.
	ProgressSnapshot
)

var progressStateNames = [...]string{"StateProbe", "StateReplicate", "StateSnapshot"}

func (s ProgressState) String() string {
	if int(s) < len(progressStateNames) {
		return progressStateNames[s]
	}
	return "StateUnknown"
}

// progress is a leader's view of one member's log.
//
// Invariant: match < next.
// Invariant: state == ProgressSnapshot iff pendingSnapshot != 0.
type progress struct {
	// match is the highest index known durable on the member and equal to
	// the leader's log; next is the index of the next entry to send.
	match, next uint64
	state       ProgressState
	// pendingSnapshot is the index of the snapshot in flight.
	pendingSnapshot uint64
	// snapshotElapsedTicks counts ticks since the snapshot went out, so a
	// snapshot lost on the network does not stall the member for good.
	snapshotElapsedTicks int
	// recentActive: the member was heard from since check-quorum last looked.
	recentActive bool
	// probeSent: in ProgressProbe, an append is outstanding; the next one
	// waits for its answer or for a heartbeat response.
	probeSent bool
	// sentCommit is the highest commit index sent to the member, so that
	// an acknowledgement arriving after a commit broadcast still gets the
	// news.
	sentCommit uint64
	inflights  *inflights
	isLearner  bool
	// lostEntries: the member told us it lost entries (a fenced refusal);
	// our heartbeats to it carry our log end until it matches it.
	lostEntries bool
	// logEndSent is the log end the last such heartbeat carried.
	logEndSent uint64
	// seen is what the leader noted of the member's answers, for
	// monitoring only (heard.go).
	seen seenNotes
}

func (pr *progress) resetState(state ProgressState) {
	pr.probeSent = false
	pr.pendingSnapshot = 0
	pr.snapshotElapsedTicks = 0
	pr.state = state
	pr.inflights.reset()
}

// becomeProbe restarts probing just after what the member is known to hold
// (or after the snapshot it was sent).
func (pr *progress) becomeProbe() {
	if pr.state == ProgressSnapshot {
		snap := pr.pendingSnapshot
		pr.resetState(ProgressProbe)
		pr.next = max(pr.match+1, snap+1)
		return
	}
	pr.resetState(ProgressProbe)
	pr.next = pr.match + 1
}

func (pr *progress) becomeReplicate() {
	pr.resetState(ProgressReplicate)
	pr.next = pr.match + 1
}

func (pr *progress) becomeSnapshot(index uint64) {
	pr.resetState(ProgressSnapshot)
	pr.pendingSnapshot = index
}

// maybeUpdate records an acknowledgement up to n. It reports whether match
// moved.
func (pr *progress) maybeUpdate(n uint64) bool {
	updated := false
	if pr.match < n {
		pr.match = n
		updated = true
		pr.probeSent = false
	}
	pr.next = max(pr.next, n+1)
	return updated
}

// maybeDecrTo handles a rejection of the append at index rejected; hint is
// where the member suggests the logs may match. It reports whether the
// rejection was news (not a stale or duplicate answer).
func (pr *progress) maybeDecrTo(rejected, hint uint64) bool {
	if pr.state == ProgressReplicate {
		if rejected <= pr.match {
			return false // stale: we already know it matches further
		}
		pr.next = pr.match + 1
		return true
	}
	if pr.next-1 != rejected {
		return false // not the probe we are waiting for
	}
	pr.next = max(min(rejected, hint+1), pr.match+1)
	pr.probeSent = false
	return true
}

// sentEntries records an append of n entries (data bytes) just sent.
func (pr *progress) sentEntries(lastIndex uint64, n int, bytes uint64) {
	switch pr.state {
	case ProgressReplicate:
		if n > 0 {
			pr.next = lastIndex + 1
			pr.inflights.add(lastIndex, bytes)
		}
	case ProgressProbe:
		pr.probeSent = true
	}
}

// isPaused says whether appends to this member must wait.
func (pr *progress) isPaused() bool {
	switch pr.state {
	case ProgressProbe:
		return pr.probeSent
	case ProgressReplicate:
		return pr.inflights.full()
	default:
		return true
	}
}
