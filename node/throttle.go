package node

import (
	"slices"
	"time"
)

// Move throttling (issue 23): a replica being added by a reassignment
// catches up from the partition's leader, and a big partition's catch-up
// would take the bandwidth the leader's clients need. With
// Config.MoveRateBytes set, every tick the leader of a partition with a
// reassignment in flight adds MoveRateBytes × TickInterval to the send
// budget (consensus/throttle.go) of each replica in the target that is
// not in the current replica set, capped at one second's worth; entries
// past the budget wait. Every replica of the partition keeps the budgets
// filled, not only the leader, so a replica elected mid-move starts with
// at most a second's worth and not with no limit. So each moving replica receives at most
// MoveRateBytes per second of log entries, plus one second's burst and
// one entry. The limit is per moving replica (Kafka's
// leader.replication.throttled.rate is per broker): the balancer's bound
// on moves in flight bounds the total. Raft snapshots, heartbeats and the
// traffic to replicas that are already members (a restarted broker's
// catch-up, a replaced disk's rebuild) are not limited.

// throttleMoves refills the budgets of the replicas being added to the
// partitions this broker leads, and lifts the limit on the others.
func (r *Reactor) throttleMoves() {
	rate := r.cfg.MoveRateBytes
	if rate <= 0 && len(r.throttled) == 0 {
		return
	}
	if r.throttled == nil {
		r.throttled = map[uint64][]uint64{}
	}
	perTick := max(1, rate*int64(r.cfg.TickInterval)/int64(time.Second))
	st := r.ctl.state
	for _, g := range sortedKeys(r.parts) {
		p := r.parts[g]
		var adding []uint64
		if _, cp, ok := st.PartitionByGroup(g); ok && rate > 0 && cp.Target != nil {
			for _, id := range cp.Target {
				if !slices.Contains(cp.Replicas, id) && uint64(id) != r.self {
					adding = append(adding, uint64(id))
				}
			}
		}
		for _, id := range r.throttled[g] {
			if !slices.Contains(adding, id) {
				p.Replica().Unthrottle(id)
			}
		}
		for _, id := range adding {
			p.Replica().AddSendBudget(id, perTick, rate)
		}
		if len(adding) == 0 {
			delete(r.throttled, g)
		} else {
			r.throttled[g] = adding
		}
	}
	for _, g := range sortedKeys(r.throttled) {
		if _, ok := r.parts[g]; !ok {
			delete(r.throttled, g) // the replica is gone, and its limits with it
		}
	}
}
