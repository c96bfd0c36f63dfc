package consensus

// Rate-limiting a member's catch-up traffic: the application (node/
// throttle.go) throttles the entries a leader sends a replica it is
// adding, so moving a partition does not take the bandwidth its clients
// need (Kafka's leader.replication.throttled.rate). A throttled member
// has a byte budget; every MsgApp with entries draws the entries' data
// bytes from it, and while it is used up (0 or below) appends to it carry
// no entries (they still carry the commit index, and heartbeats go on).
// The application refills the budget as time passes. An append carries
// at most the budget's worth of entries, but at least one entry, so it may
// overdraw the budget by less than one entry; the next ones wait for the
// refills to pay that back, so over any span the member receives at most
// the refills plus one entry. Snapshots are not limited. The budgets
// outlive terms and membership changes: the application says when a
// member is no longer limited.

// AddSendBudget limits the entry bytes this node sends member id as
// leader, adding bytes to its budget and capping the budget at capBytes
// (a member not yet limited starts from 0). Entries held back for want of
// budget go out at once if the budget is now positive.
func (rn *RawNode) AddSendBudget(id uint64, bytes, capBytes int64) {
	r := rn.raft
	if r.sendBudget == nil {
		r.sendBudget = map[uint64]int64{}
	}
	r.sendBudget[id] = min(r.sendBudget[id]+bytes, capBytes)
	if r.sendBudget[id] > 0 && r.state == StateLeader && id != r.id {
		for r.maybeSendAppend(id, false) {
		}
	}
}

// Unthrottle lifts the limit on what this node sends member id.
func (rn *RawNode) Unthrottle(id uint64) {
	r := rn.raft
	if _, ok := r.sendBudget[id]; !ok {
		return
	}
	delete(r.sendBudget, id)
	if r.state == StateLeader && id != r.id {
		for r.maybeSendAppend(id, false) {
		}
	}
}

// SendBudget returns member id's budget and whether it is limited.
func (rn *RawNode) SendBudget(id uint64) (int64, bool) {
	b, ok := rn.raft.sendBudget[id]
	return b, ok
}
