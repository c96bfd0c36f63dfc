package node

import (
	"github.com/floe-broker/floe/consensus"
	"github.com/floe-broker/floe/node/partition"
)

// groupState is what the reactor keeps about one local Raft group (a
// partition replica, or the controller's) beside the replica itself. Each
// part belongs to one file, which alone reads and writes it; the record as
// a whole lives exactly as long as the local replica: it survives a reopen
// (repair.go), and dropGroup removes it with the replica, so a deleted
// partition leaves nothing behind.
type groupState struct {
	openedTick uint64        // the tick the replica was last opened at (replicas.go)
	opening    uint64        // which opening of a replica on this broker it was (Reactor.openings)
	campaign   firstCampaign // a new partition's first election (replicas.go)
	lease      readLease     // the leader's read lease (lease.go)
	isr        isrMarks      // the leader's record of its voters catching up (isr.go)

	fence        consensus.VoteFence // the vote fence in force, zero if none (repair.go)
	openFence    consensus.VoteFence // the vote fence the replica was last opened with
	unrepairable bool                // damaged with no peer to repair from, reported (repair.go)

	settingReplicas bool // a SetReplicas report is in flight (reassign.go)
	// walkAsked and walkFresh: the leader terms for which a metadata
	// barrier was requested, and passed, before the walk may act
	// (reassign.go walkMetadataFresh).
	walkAsked, walkFresh uint64
	// reapAsked and reapFresh: the metadata barrier requested, and the
	// one passed, since this replica was doomed, before it may be
	// deleted on the metadata's word (tombstone.go removalFresh); tokens
	// from Reactor.reapSeq, zero for none.
	reapAsked, reapFresh uint64
}

// group returns group g's record, creating it. Call it only for a group
// with a local replica (or one being opened): a record made for a group
// that is not here would outlive it.
func (r *Reactor) group(g uint64) *groupState {
	s, ok := r.local[g]
	if !ok {
		s = &groupState{}
		r.local[g] = s
	}
	return s
}

// dropGroup forgets partition group g: its index entries and its record.
// The replica itself is the caller's to close.
func (r *Reactor) dropGroup(g uint64) {
	if p, ok := r.parts[g]; ok {
		r.unname(p)
	}
	delete(r.parts, g)
	r.groupsChanged()
	delete(r.local, g)
	delete(r.doomed, g)
}

// groupsWhere returns the local groups whose record satisfies f, sorted.
func (r *Reactor) groupsWhere(f func(*groupState) bool) []uint64 {
	var gs []uint64
	for _, g := range sortedKeys(r.local) {
		if f(r.local[g]) {
			gs = append(gs, g)
		}
	}
	return gs
}

// unname removes p from the by-name index, unless the name now belongs to
// another partition: a topic deleted and created again may have its new
// replica opened here before the old one is dropped (a node that was
// behind applies both), and the new one must stay reachable by name.
func (r *Reactor) unname(p *partition.Partition) {
	k := topicPartition{p.Topic, p.Index}
	if r.byName[k] == p {
		delete(r.byName, k)
	}
}
