package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A group's first FindCoordinator on a new cluster creates
// __consumer_offsets and waits for the coordinator instead of answering
// COORDINATOR_NOT_AVAILABLE, which kadm's FetchOffsets (and so `floe
// consume --group`) does not retry. Both a v3 and a v4 request, on one
// broker and on three.
func TestFirstFindCoordinatorFindsOne(t *testing.T) {
	for _, n := range []int{1, 3} {
		c := newCluster(t, n, 41)
		c.waitReady()
		v3 := kmsg.NewPtrFindCoordinatorRequest()
		v3.Version, v3.CoordinatorKey = 3, "billing"
		r3 := c.request(1, v3).(*kmsg.FindCoordinatorResponse)
		if err := kerr.ErrorForCode(r3.ErrorCode); err != nil || r3.NodeID <= 0 {
			t.Fatalf("%d brokers, v3: %v, node %d", n, err, r3.NodeID)
		}
		v4 := kmsg.NewPtrFindCoordinatorRequest()
		v4.Version, v4.CoordinatorKeys = 4, []string{"a", "b", "c"}
		r4 := c.request(1, v4).(*kmsg.FindCoordinatorResponse)
		for _, co := range r4.Coordinators {
			if err := kerr.ErrorForCode(co.ErrorCode); err != nil || co.NodeID <= 0 {
				t.Fatalf("%d brokers, v4 %s: %v, node %d", n, co.Key, err, co.NodeID)
			}
		}
	}
}
