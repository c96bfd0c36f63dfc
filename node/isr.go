package node

import (
	"slices"
	"time"

	"github.com/floe-broker/floe/consensus"
)

// In-sync replicas, as Kafka means them (replica.lag.time.max.ms): a
// voter is in sync while it has caught up with the leader's log recently.
// "Heard from within an election timeout" (activeVoters) is not enough: a
// broker rebuilding an empty disk answers heartbeats at once but holds
// little, and an operator told it is in sync would restart the next
// broker while it is the only other copy.
//
// The leader keeps, per group, a mark: its last index at the tick the mark
// was set, renewed every half lag window. A voter whose match reaches the
// mark has caught up with the log as it was then; it stays in sync for a
// lag window (ReplicaLagTicks) after it was last seen at or past a mark.
// A healthy follower reaches each mark within a replication round trip of
// it, so it is seen at least once per half window and never drops out; a
// follower behind by more than it can close in a lag window does, and one
// Raft no longer hears from leaves as soon as a sample finds it behind the
// mark. A new
// leadership starts with every voter in sync for one lag window (the
// leader cannot know yet; Kafka's new leader likewise starts from the
// previous ISR), with the mark at its last index: a voter that does not
// reach it within the window leaves.
//
// Acks=all produces still count active voters for min.insync.replicas
// (api_produce.go): Raft commits with whatever majority has the entries.

// DefaultReplicaLagMax is Kafka's default replica.lag.time.max.ms.
const DefaultReplicaLagMax = 30 * time.Second

// isrMarks is one led group's catch-up record (groupState.isr).
type isrMarks struct {
	term     uint64            // the leadership the record belongs to; 0: none yet
	mark     uint64            // the leader's last index at markTick
	markTick uint64            // the tick the mark was set
	caught   map[uint64]uint64 // voter -> the last tick its match was at or past a mark
}

// isrSampleTicks is how often the leader compares its voters with the
// mark: often enough that a healthy voter is seen well inside the window.
func (r *Reactor) isrSampleTicks() uint64 { return max(1, r.replicaLagTicks()/8) }

// replicaLagTicks is the lag window in ticks (Config.ReplicaLagMax).
func (r *Reactor) replicaLagTicks() uint64 {
	lag := r.cfg.ReplicaLagMax
	if lag <= 0 {
		lag = DefaultReplicaLagMax
	}
	return max(2, uint64(lag/r.cfg.TickInterval))
}

// sampleISR updates the catch-up records of the partitions led here.
func (r *Reactor) sampleISR() {
	if r.ticks%r.isrSampleTicks() != 0 {
		return
	}
	for _, g := range sortedKeys(r.parts) {
		p := r.parts[g]
		if !p.IsLeader() {
			if s, ok := r.local[g]; ok {
				s.isr = isrMarks{}
			}
			continue
		}
		r.group(g).isr.sample(p.Replica().Status(), r.ticks, r.replicaLagTicks())
	}
}

// sample records which voters are at or past the mark, and renews the
// mark every half window.
func (m *isrMarks) sample(st consensus.Status, now, lagTicks uint64) {
	if st.RaftState != consensus.StateLeader {
		return
	}
	if m.term != st.Term {
		*m = isrMarks{term: st.Term, mark: st.LastIndex, markTick: now, caught: map[uint64]uint64{}}
		for _, pr := range st.Progress {
			m.caught[pr.ID] = now // a lag window's grace: see above
		}
	}
	for _, pr := range st.Progress {
		switch {
		case pr.Match >= m.mark:
			m.caught[pr.ID] = now
		case !pr.RecentActive:
			// Out of touch and behind the mark: out at once, and it
			// must catch up again to come back, as a Kafka follower
			// rejoins the ISR only once caught up. (Raft clears the
			// marks of recent activity once per election timeout,
			// so a voter keeping up may be seen inactive; at the
			// mark, it stays.)
			delete(m.caught, pr.ID)
		}
	}
	if now-m.markTick >= lagTicks/2 {
		m.mark, m.markTick = st.LastIndex, now
	}
}

// inSync reports whether voter id is in sync at tick now: the leader
// itself always; another voter while it was at or past a mark within the
// lag window (and not since seen out of touch behind one). Without a
// record of this leadership (it is made at the next sample), a voter
// Raft hears from counts.
func (m *isrMarks) inSync(pr consensus.PeerProgress, self, term, now, lagTicks uint64) bool {
	if pr.ID == self {
		return true
	}
	if m.term != term {
		return pr.RecentActive
	}
	t, ok := m.caught[pr.ID]
	return ok && now-t <= lagTicks
}

// inSyncVoters returns the voters of a group led here that are in sync,
// sorted; on another role, nil.
func (r *Reactor) inSyncVoters(g uint64) []uint64 {
	p, ok := r.parts[g]
	if !ok || !p.IsLeader() {
		return nil
	}
	st := p.Replica().Status()
	var m isrMarks
	if s, ok := r.local[g]; ok {
		m = s.isr
	}
	var out []uint64
	for _, pr := range st.Progress {
		if !pr.IsLearner && m.inSync(pr, r.self, st.Term, r.ticks, r.replicaLagTicks()) {
			out = append(out, pr.ID)
		}
	}
	slices.Sort(out)
	return out
}
