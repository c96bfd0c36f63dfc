package controller

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"pgregory.net/rapid"
)

// cluster is a drawn set of brokers: ids 1..n, each on a rack, some
// decommissioned, some not eligible, with some partitions already placed.
type cluster struct {
	s          *State
	ineligible map[int32]bool
	racks      map[int32]string
}

func (c *cluster) eligible(id int32) bool { return !c.ineligible[id] }

// usable returns the brokers Place may use, sorted.
func (c *cluster) usable() []int32 {
	var out []int32
	for _, id := range c.s.BrokerIDs() {
		if !c.s.Brokers[id].Decommissioned && c.eligible(id) {
			out = append(out, id)
		}
	}
	return out
}

// genCluster draws a cluster; balanced puts the usable brokers evenly on
// the racks (every rack the same size).
func genCluster(t *rapid.T, balanced bool) *cluster {
	c := &cluster{s: NewState("c"), ineligible: map[int32]bool{}, racks: map[int32]string{}}
	racks := []string{"", "r1", "r2", "r3"}[:rapid.IntRange(1, 4).Draw(t, "racks")]
	n := rapid.IntRange(1, 12).Draw(t, "brokers")
	if balanced {
		n = len(racks) * rapid.IntRange(1, 3).Draw(t, "perRack")
	}
	for id := int32(1); id <= int32(n); id++ {
		rack := rapid.SampledFrom(racks).Draw(t, "rack")
		if balanced {
			rack = racks[int(id-1)%len(racks)]
		}
		c.racks[id] = rack
		if res := c.s.Apply(&Command{RegisterBroker: &Broker{ID: id, Rack: rack}}); res.Err != nil {
			t.Fatalf("register: %v", res.Err)
		}
		if !balanced {
			if rapid.IntRange(0, 5).Draw(t, "decommission") == 0 {
				c.s.Apply(&Command{Decommission: &id})
			}
			c.ineligible[id] = rapid.IntRange(0, 5).Draw(t, "ineligible") == 0
		}
	}
	// Partitions already in the cluster move the rotation's start.
	existing := rapid.IntRange(0, 7).Draw(t, "existing")
	if existing > 0 {
		ps := make([]Partition, existing)
		for i := range ps {
			ps[i] = Partition{Index: int32(i), Replicas: []int32{1}}
		}
		if res := c.s.Apply(&Command{CreateTopic: &Topic{Name: "old", Partitions: ps}}); res.Err != nil {
			t.Fatalf("existing topic: %v", res.Err)
		}
	}
	return c
}

// checkPlacement checks what Place promises for any cluster.
func checkPlacement(t *rapid.T, c *cluster, n, rf int, first int32, ps []Partition) {
	usable := map[int32]bool{}
	for _, id := range c.usable() {
		usable[id] = true
	}
	if len(ps) != n {
		t.Fatalf("%d partitions, want %d", len(ps), n)
	}
	leaders := map[int32]int{}
	for i, p := range ps {
		if p.Index != first+int32(i) || p.Leader != -1 || p.LeaderEpoch != -1 || p.Target != nil {
			t.Fatalf("partition %d: %+v", i, p)
		}
		if len(p.Replicas) != rf {
			t.Fatalf("partition %d: %d replicas, want %d", i, len(p.Replicas), rf)
		}
		seen := map[int32]bool{}
		for _, r := range p.Replicas {
			if !usable[r] {
				t.Fatalf("partition %d on broker %d, which is decommissioned or not eligible", i, r)
			}
			if seen[r] {
				t.Fatalf("partition %d: broker %d twice in %v", i, r, p.Replicas)
			}
			seen[r] = true
		}
		leaders[p.Replicas[0]]++
	}
	lo, hi := n, 0
	for id := range usable {
		lo, hi = min(lo, leaders[id]), max(hi, leaders[id])
	}
	if hi-lo > 1 {
		t.Fatalf("preferred leaders per broker range from %d to %d: %v", lo, hi, leaders)
	}
}

func rackCount(c *cluster, ids []int32) int {
	racks := map[string]bool{}
	for _, id := range ids {
		racks[c.racks[id]] = true
	}
	return len(racks)
}

func TestPlaceProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genCluster(t, false)
		usable := c.usable()
		n := rapid.IntRange(-1, 20).Draw(t, "n")
		rf := rapid.IntRange(-1, len(usable)+1).Draw(t, "rf")
		first := rapid.Int32Range(0, 5).Draw(t, "first")
		before := c.s.Snapshot()
		ps, err := c.s.Place(n, rf, first, c.eligible)
		if !bytes.Equal(before, c.s.Snapshot()) {
			t.Fatalf("Place changed the state")
		}
		if n <= 0 || rf <= 0 || rf > len(usable) {
			if !errors.Is(err, kerr.InvalidReplicationFactor) {
				t.Fatalf("Place(n=%d, rf=%d) over %d usable brokers: %v, want INVALID_REPLICATION_FACTOR", n, rf, len(usable), err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Place(n=%d, rf=%d) over %d usable brokers: %v", n, rf, len(usable), err)
		}
		checkPlacement(t, c, n, rf, first, ps)
		// Deterministic.
		again, _ := c.s.Place(n, rf, first, c.eligible)
		if !reflect.DeepEqual(ps, again) {
			t.Fatalf("Place is not deterministic")
		}
		// What Place proposes, Apply accepts.
		if first == 0 {
			if res := c.s.Apply(throughLog(t, &Command{CreateTopic: &Topic{Name: "new", Partitions: ps}})); res.Err != nil {
				t.Fatalf("Apply refused Place's placement: %v", res.Err)
			}
		}
	})
}

// With the brokers spread evenly over the racks and at least rf racks,
// every partition has its replicas on rf different racks.
func TestPlaceSpreadsRacksBalanced(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genCluster(t, true)
		racks := rackCount(c, c.usable())
		rf := rapid.IntRange(1, racks).Draw(t, "rf")
		n := rapid.IntRange(1, 20).Draw(t, "n")
		ps, err := c.s.Place(n, rf, 0, c.eligible)
		if err != nil {
			t.Fatalf("Place: %v", err)
		}
		checkPlacement(t, c, n, rf, 0, ps)
		for _, p := range ps {
			if got := rackCount(c, p.Replicas); got != rf {
				t.Fatalf("partition %d on %v spans %d racks, want %d", p.Index, p.Replicas, got, rf)
			}
		}
	})
}

// Place's comment promises that "a partition's replicas span min(rf, racks)
// racks" for any rack layout.
func TestPlaceSpreadsRacksUneven(t *testing.T) {
	s := NewState("c")
	for id, rack := range map[int32]string{1: "r1", 2: "r1", 3: "r1", 4: "r2"} {
		s.Apply(&Command{RegisterBroker: &Broker{ID: id, Rack: rack}})
	}
	ps, err := s.Place(4, 2, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		r := map[string]bool{}
		for _, id := range p.Replicas {
			r[s.Brokers[id].Rack] = true
		}
		if len(r) != 2 {
			t.Errorf("partition %d on %v: %d rack(s), want 2", p.Index, p.Replicas, len(r))
		}
	}
}

func TestPlaceRotatesAcrossTopics(t *testing.T) {
	s := NewState("c")
	for id := int32(1); id <= 3; id++ {
		s.Apply(&Command{RegisterBroker: &Broker{ID: id}})
	}
	var leaders []int32
	for i := 0; i < 3; i++ {
		ps, err := s.Place(1, 1, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		leaders = append(leaders, ps[0].Replicas[0])
		if res := s.Apply(&Command{CreateTopic: &Topic{Name: fmt.Sprintf("t%d", i), Partitions: ps}}); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	if !reflect.DeepEqual(leaders, []int32{1, 2, 3}) {
		t.Fatalf("one-partition topics led by %v, want 1 2 3", leaders)
	}
}
