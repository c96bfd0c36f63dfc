package sim

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
)

// Membership faults beside reassignment (nemesis.reassign): a broker's
// decommission, and the figures that show membership changes took effect.

// decommission asks the cluster to decommission one broker
// (UnregisterBroker), as an operator retiring it would: the controller
// moves every replica it holds elsewhere, one partition at a time, by the
// same membership walk as a reassignment. Only in a cluster of four
// brokers or more (a 5-node one, or a 3-node one a broker joined: a
// 3-broker one has nowhere to move a 3-replica partition), at most once a
// run, so the replicas always fit on the brokers left. The broker stays up
// and keeps its controller vote; later reassignments leave it out.
func (n *nemesis) decommission() {
	r := n.r
	if len(n.w.IDs()) < 4 || n.decommissioned != 0 {
		return
	}
	id := n.shuffled()[0]
	n.decommissioned = id
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = int32(id)
	n.w.Tracef("fault decommission n%d", id)
	r.kn.call(r.meta.anyNode(), req, 2*time.Second, func(resp kmsg.Response, err error) {
		code := int16(-1)
		if err == nil {
			code = resp.(*kmsg.UnregisterBrokerResponse).ErrorCode
		}
		n.w.Tracef("decommission n%d: err=%v code=%d", id, err, code)
	})
}

// reassignable lists the brokers a reassignment may place replicas on
// (all but a decommissioned one), shuffled.
func (n *nemesis) reassignable() []netx.NodeID {
	var ids []netx.NodeID
	for _, id := range n.shuffled() {
		if id != n.decommissioned {
			ids = append(ids, id)
		}
	}
	return ids
}

// membershipMoves counts the partitions of the workload topic whose
// membership changed and whose walk to the new replica set completed (the
// partition's leader reported the committed membership, and the
// controller recorded it), in the most advanced metadata any up broker
// holds.
func (r *run) membershipMoves() int {
	best := map[int32]int32{} // partition -> highest reassignment epoch seen
	done := map[int32]bool{}
	for _, id := range r.w.IDs() {
		b, ok := r.w.Instance(id).(*Broker)
		if !ok || !r.w.Up(id) || b.R == nil {
			continue
		}
		t, ok := b.R.Metadata().Topics[r.topic]
		if !ok {
			continue
		}
		for _, p := range t.Partitions {
			if e, seen := best[p.Index]; !seen || p.ReassignEpoch > e {
				best[p.Index] = p.ReassignEpoch
				done[p.Index] = p.Moved && p.ReassignEpoch > 0 && p.Settled()
			}
		}
	}
	moves := 0
	for _, d := range done {
		if d {
			moves++
		}
	}
	return moves
}

// traceReplicas writes every up broker's view of its replicas, of every
// topic, to the trace (a failing run's first clue; the group stuck may be
// another topic's than the workload's, as __consumer_offsets-0 was in seed
// 1700474).
func (r *run) traceReplicas() {
	for _, id := range r.w.IDs() {
		b, ok := r.w.Instance(id).(*Broker)
		if !ok || !r.w.Up(id) || b.R == nil {
			continue
		}
		for _, line := range b.R.DescribeReplicas("") {
			r.w.Tracef("replica %s", line)
		}
	}
}

// partitionOf returns the workload topic's partition whose replica
// directory is dir, or -1 for any other group's.
func (n *nemesis) partitionOf(dir string) int32 {
	var part int32
	var group uint64
	base := path.Base(dir)
	if !strings.HasPrefix(base, n.r.topic+"-") {
		return -1
	}
	if _, err := fmt.Sscanf(strings.TrimPrefix(base, n.r.topic+"-"), "%d-%d", &part, &group); err != nil {
		return -1
	}
	return part
}
