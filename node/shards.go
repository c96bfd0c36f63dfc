package node

// Coordinators hosted on the partitions of an internal topic: consumer
// groups on __consumer_offsets (coordinators.go), transactions on
// __transaction_state (txns.go). Both follow one rule, kept here once: a
// partition's coordinator exists exactly while a local replica of it is a
// ready leader (it has committed an entry of its own term, so its high
// watermark covers everything earlier leaders committed), and it is rebuilt
// from the partition's committed records whenever that replica's term
// changes.

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/node/controller"
	"github.com/floe-broker/floe/node/partition"
)

// shardSet is the set of coordinators of one internal topic, by Raft group
// of the partition that hosts each.
//
// Invariant: every shard's coordinator is open and its partition was a
// ready leader in shard.term when last reconciled.
type shardSet[C any] struct {
	shards map[uint64]*shard[C]
}

// shard is the coordinator of one partition of an internal topic.
type shard[C any] struct {
	index int32
	term  uint64
	coord C
}

// shardHooks say how a coordinator is built from its partition and how it
// is closed (parked requests answered, counters kept).
type shardHooks[C any] struct {
	load  func(*partition.Partition) (C, error)
	close func(C)
}

// sync opens, rebuilds and closes coordinators to match which partitions
// of t (nil before the topic exists) this node leads now.
func (s *shardSet[C]) sync(r *Reactor, t *controller.Topic, h shardHooks[C]) {
	want := map[uint64]bool{}
	if t != nil {
		for i := range t.Partitions {
			want[t.Partitions[i].Group] = true
			s.syncOne(r, &t.Partitions[i], h)
		}
	}
	for _, g := range sortedKeys(s.shards) {
		if !want[g] {
			s.closeOne(g, h)
		}
	}
}

// syncOne reconciles the coordinator of one partition.
func (s *shardSet[C]) syncOne(r *Reactor, cp *controller.Partition, h shardHooks[C]) {
	if s.shards == nil {
		s.shards = map[uint64]*shard[C]{}
	}
	p, ok := r.parts[cp.Group]
	sh := s.shards[cp.Group]
	if !ok || !p.Ready() {
		if sh != nil {
			s.closeOne(cp.Group, h)
		}
		return
	}
	if sh != nil && sh.term == p.Term() {
		return
	}
	if sh != nil {
		s.closeOne(cp.Group, h)
	}
	coord, err := h.load(p)
	if err != nil {
		r.env.Logf("node %d: load %s-%d: %v", r.self, p.Topic, p.Index, err)
		return // retried on the next tick; requests get COORDINATOR_LOAD_IN_PROGRESS
	}
	s.shards[cp.Group] = &shard[C]{index: cp.Index, term: p.Term(), coord: coord}
}

func (s *shardSet[C]) closeOne(g uint64, h shardHooks[C]) {
	if sh := s.shards[g]; sh != nil {
		h.close(sh.coord)
		delete(s.shards, g)
	}
}

// lookup returns the local coordinator of partition index of t, or the
// error a request for it gets: NOT_COORDINATOR when this broker does not
// lead it with a read lease (coordinatingPartition),
// COORDINATOR_LOAD_IN_PROGRESS until its coordinator is loaded.
func (s *shardSet[C]) lookup(r *Reactor, t *controller.Topic, index int32, h shardHooks[C], loading, notCoord bugSite) (C, *kerr.Error) {
	var zero C
	cp, p, errV := r.coordinatingPartition(t, index)
	if errV != nil {
		return zero, errV
	}
	if sh := s.shards[cp.Group]; sh == nil || sh.term != p.Term() {
		s.syncOne(r, cp, h)
	}
	sh := s.shards[cp.Group]
	if sh == nil || r.buggify(loading) {
		return zero, kerr.CoordinatorLoadInProgress
	}
	if r.buggify(notCoord) {
		return zero, kerr.NotCoordinator
	}
	return sh.coord, nil
}
