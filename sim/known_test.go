package sim

import (
	"fmt"
	"testing"

	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/group"
)

// epochStub stands in for a broker in the deposed-leader probe's world: it
// believes it leads each "topic/partition" of led in the epoch given.
type epochStub struct{ led map[string]int32 }

func (s *epochStub) Handle(netx.NodeID, []byte) {}
func (s *epochStub) Stop()                      {}
func (s *epochStub) LeaderEpochOf(topic string, partition int32) (int32, bool) {
	e, ok := s.led[fmt.Sprintf("%s/%d", topic, partition)]
	return e, ok
}

// The moment of --all-faults seed 1055909 (eb6c89d) at 2.746 s, with two
// partitions of __consumer_offsets: n1 leads partition 1, group g0's, in
// epoch 2 and nobody leads it later; it also still believes it leads
// partition 0 in epoch 3, from which it was cut off, while n5 leads it in
// epoch 4. n1's answer to g0's OffsetFetch comes from partition 1, so it
// is no deposed leader's; the probe looked at partition 0 whatever the
// group and counted it as one (read-from-deposed-leader). A coordinator
// deposed on its group's own partition must still be caught.
func TestCoordinatorProbeLooksAtTheGroupsPartition(t *testing.T) {
	stubs := map[netx.NodeID]*epochStub{}
	w := NewWorld(Config{Seed: 1, TraceKeep: 50}, func(env Env) Instance {
		s := &epochStub{led: map[string]int32{}}
		stubs[env.ID] = s
		return s
	})
	for range 5 {
		w.AddNode()
	}
	o := Options{}
	o.Broker.OffsetsPartitions = 2
	r := &run{w: w, o: o, maxEpoch: map[string]int32{}}
	if p := group.PartitionFor("g0", 2); p != 1 {
		t.Fatalf("g0 is on partition %d of two, want 1", p)
	}
	if p := group.PartitionFor("g1", 2); p != 0 {
		t.Fatalf("g1 is on partition %d of two, want 0", p)
	}
	stubs[1].led["__consumer_offsets/1"] = 2
	stubs[1].led["__consumer_offsets/0"] = 3
	stubs[5].led["__consumer_offsets/0"] = 4

	if r.coordinatorProbe(1, "g0")() {
		t.Errorf("n1, g0's rightful coordinator (partition 1, epoch 2), was taken for a deposed one: " +
			"the probe looked at partition 0, where n1 is a cut-off leader")
	}
	if !r.coordinatorProbe(1, "g1")() {
		t.Errorf("n1 answering for g1 (partition 0) in epoch 3 while n5 leads it in epoch 4 was not taken for deposed")
	}
	// A later leader of partition 1 deposes n1 as g0's coordinator.
	stubs[3].led["__consumer_offsets/1"] = 3
	if !r.coordinatorProbe(1, "g0")() {
		t.Errorf("n1 answering for g0 (partition 1) in epoch 2 while n3 leads it in epoch 3 was not taken for deposed")
	}
}
