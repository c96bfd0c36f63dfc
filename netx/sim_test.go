package netx

import (
	"crypto/sha256"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/clock"
)

// simHarness is a SimNetwork on a clock.Sim with nodes that log every
// delivery as "to<-from:msg@time".
type simHarness struct {
	t     *testing.T
	sim   *clock.Sim
	net   *SimNetwork
	nodes map[NodeID]Transport
	log   []string
}

func newSimHarness(t *testing.T, seed int64, ids ...NodeID) *simHarness {
	sim := clock.NewSim(time.Unix(0, 0))
	h := &simHarness{t: t, sim: sim, net: NewSimNetwork(sim, rand.New(rand.NewSource(seed))),
		nodes: map[NodeID]Transport{}}
	for _, id := range ids {
		h.start(id)
	}
	return h
}

func (h *simHarness) start(id NodeID) {
	h.nodes[id] = h.net.Endpoint(id, func(from NodeID, msg []byte) {
		h.log = append(h.log, fmt.Sprintf("%d<-%d:%s@%v", id, from, msg, h.sim.Monotonic()))
	})
}

func (h *simHarness) send(from, to NodeID, msg string) {
	h.nodes[from].Send(to, []byte(msg))
}

// drain runs the simulation until nothing is pending and returns the log,
// clearing it.
func (h *simHarness) drain() []string {
	for h.sim.Step() {
	}
	out := h.log
	h.log = nil
	return out
}

// checkStats asserts the conservation law of SimNetStats.
func (h *simHarness) checkStats() SimNetStats {
	h.t.Helper()
	s := h.net.Stats()
	if s.Sent+s.Duplicated != s.Delivered+s.Dropped+uint64(s.InFlight) {
		h.t.Fatalf("stats do not add up: %+v", s)
	}
	return s
}

func expectLog(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("deliveries:\n got %q\nwant %q", got, want)
	}
}

func TestSimPerfectNetwork(t *testing.T) {
	h := newSimHarness(t, 1, 1, 2)
	h.send(1, 2, "a")
	h.send(1, 2, "b")
	h.send(2, 1, "c")
	h.send(1, 1, "self")    // to yourself: dropped
	h.send(1, 9, "unknown") // unknown peer: dropped
	if len(h.log) != 0 {
		t.Fatal("Send delivered synchronously")
	}
	expectLog(t, h.drain(), "2<-1:a@0s", "2<-1:b@0s", "1<-2:c@0s")
	if s := h.checkStats(); s.Sent != 5 || s.Delivered != 3 || s.Dropped != 2 || s.InFlight != 0 {
		t.Fatalf("stats %+v", s)
	}
	zero := h.net.Endpoint(0, func(NodeID, []byte) { t.Fatal("node 0 received") })
	zero.Send(1, []byte("x"))
	h.send(1, 0, "to-zero")
	expectLog(t, h.drain())
	h.checkStats()
}

func TestSimDelayWithinBounds(t *testing.T) {
	h := newSimHarness(t, 2, 1, 2)
	h.net.SetDefaultFaults(LinkFaults{DelayMin: 10 * time.Millisecond, DelayMax: 20 * time.Millisecond})
	var at []time.Duration
	h.net.Endpoint(2, func(NodeID, []byte) { at = append(at, h.sim.Monotonic()) })
	for range 200 {
		h.send(1, 2, "m")
	}
	h.drain()
	if len(at) != 200 {
		t.Fatalf("%d of 200 delivered on a lossless link", len(at))
	}
	distinct := map[time.Duration]bool{}
	for _, d := range at {
		if d < 10*time.Millisecond || d > 20*time.Millisecond {
			t.Fatalf("delivered after %v, outside [10ms, 20ms]", d)
		}
		distinct[d] = true
	}
	if len(distinct) < 100 {
		t.Fatalf("only %d distinct delays in 200: delay is not drawn", len(distinct))
	}
}

func TestSimDrop(t *testing.T) {
	h := newSimHarness(t, 3, 1, 2)
	h.net.SetLinkFaults(1, 2, LinkFaults{DropProb: 1})
	h.send(1, 2, "lost")
	h.send(2, 1, "reverse-ok") // only 1->2 has faults
	expectLog(t, h.drain(), "1<-2:reverse-ok@0s")

	h.net.SetLinkFaults(1, 2, LinkFaults{DropProb: 0.3})
	for range 1000 {
		h.send(1, 2, "m")
	}
	got := len(h.drain())
	// 700 expected; 5 standard deviations is about 72.
	if got < 620 || got > 780 {
		t.Fatalf("delivered %d of 1000 at DropProb 0.3", got)
	}
	h.net.ClearLinkFaults(1, 2)
	h.send(1, 2, "back-to-default")
	expectLog(t, h.drain(), "2<-1:back-to-default@0s")
	h.checkStats()
}

func TestSimDuplicateCopiesAreIndependent(t *testing.T) {
	h := newSimHarness(t, 4, 1, 2)
	h.net.SetDefaultFaults(LinkFaults{DupProb: 1, DelayMax: 5 * time.Millisecond})
	var got [][]byte
	h.net.Endpoint(2, func(_ NodeID, msg []byte) { got = append(got, msg) })
	h.send(1, 2, "dup")
	h.drain()
	if len(got) != 2 || string(got[0]) != "dup" || string(got[1]) != "dup" {
		t.Fatalf("got %q, want two copies", got)
	}
	got[0][0] = 'X' // the first handler owns its copy...
	if string(got[1]) != "dup" {
		t.Fatal("duplicate shares memory with the original") // ...and not the second's
	}
	if s := h.checkStats(); s.Duplicated != 1 || s.Delivered != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func inOrder(log []string) bool {
	return slices.IsSortedFunc(log, func(a, b string) int {
		var x, y int
		fmt.Sscanf(a[strings.Index(a, ":")+1:], "%d", &x)
		fmt.Sscanf(b[strings.Index(b, ":")+1:], "%d", &y)
		return x - y
	})
}

func TestSimReorder(t *testing.T) {
	fixed := LinkFaults{DelayMin: 5 * time.Millisecond, DelayMax: 5 * time.Millisecond}
	h := newSimHarness(t, 5, 1, 2)
	h.net.SetDefaultFaults(fixed)
	for i := range 50 {
		h.send(1, 2, fmt.Sprint(i))
	}
	if log := h.drain(); len(log) != 50 || !inOrder(log) {
		t.Fatalf("fixed delay, no reordering: got %q", log)
	}

	fixed.ReorderProb = 0.3
	h.net.SetDefaultFaults(fixed)
	for i := range 50 {
		h.send(1, 2, fmt.Sprint(i))
		h.sim.RunFor(time.Millisecond) // spaced sends, so only the extra delay reorders
	}
	log := h.drain()
	if len(log) != 50 {
		t.Fatalf("reordering lost messages: %d of 50", len(log))
	}
	if inOrder(log) {
		t.Fatalf("ReorderProb 0.3 kept 50 spaced messages in order: %q", log)
	}
}

func TestSimClogHoldsThenDeliversInOrder(t *testing.T) {
	h := newSimHarness(t, 6, 1, 2)
	h.net.SetLinkFaults(1, 2, LinkFaults{Clogged: true})
	h.send(1, 2, "0")
	h.sim.RunFor(time.Second)
	h.send(1, 2, "1")
	h.send(2, 1, "other-direction")
	expectLog(t, h.drain(), "1<-2:other-direction@1s")
	if s := h.checkStats(); s.Held != 2 || s.InFlight != 2 || s.Dropped != 0 {
		t.Fatalf("stats while clogged %+v", s)
	}
	h.sim.RunFor(time.Hour)
	h.net.SetLinkFaults(1, 2, LinkFaults{})
	expectLog(t, h.drain(), "2<-1:0@1h0m1s", "2<-1:1@1h0m1s")

	// A message in flight when the link clogs is held; Heal releases it.
	h.net.SetDefaultFaults(LinkFaults{DelayMin: time.Second, DelayMax: time.Second})
	h.send(1, 2, "2")
	h.net.SetDefaultFaults(LinkFaults{DelayMin: time.Second, DelayMax: time.Second, Clogged: true})
	h.net.ClearLinkFaults(1, 2)
	h.sim.RunFor(time.Minute)
	expectLog(t, h.drain())
	h.net.Heal()
	expectLog(t, h.drain(), "2<-1:2@1h1m1s")
	if s := h.checkStats(); s.Held != 0 || s.Delivered != 4 {
		t.Fatalf("stats after heal %+v", s)
	}
}

func TestSimPartition(t *testing.T) {
	h := newSimHarness(t, 7, 1, 2, 3, 4)
	h.net.SetDefaultFaults(LinkFaults{DelayMin: 10 * time.Millisecond, DelayMax: 10 * time.Millisecond})
	h.send(1, 3, "in-flight") // lost: the partition starts before it arrives
	h.net.Partition([]NodeID{1, 2}, []NodeID{3})
	for _, l := range [][2]NodeID{{1, 2}, {2, 1}, {1, 3}, {3, 1}, {3, 4}, {4, 3}, {1, 4}} {
		h.send(l[0], l[1], fmt.Sprintf("%d-%d", l[0], l[1]))
	}
	// 4 is named in no group, so it is alone with the other unnamed nodes.
	expectLog(t, h.drain(), "2<-1:1-2@10ms", "1<-2:2-1@10ms")

	h.net.Heal()
	h.send(1, 3, "healed")
	h.send(4, 1, "healed")
	expectLog(t, h.drain(), "3<-1:healed@20ms", "1<-4:healed@20ms")
	if s := h.checkStats(); s.Dropped != 6 {
		t.Fatalf("stats %+v, want 6 dropped", s)
	}
}

func TestSimCutIsOneWay(t *testing.T) {
	h := newSimHarness(t, 8, 1, 2)
	h.net.Cut(1, 2)
	h.send(1, 2, "cut")
	h.send(2, 1, "open")
	expectLog(t, h.drain(), "1<-2:open@0s")
	h.net.Heal()
	h.send(1, 2, "healed")
	expectLog(t, h.drain(), "2<-1:healed@0s")
}

func TestSimIsolate(t *testing.T) {
	h := newSimHarness(t, 9, 1, 2, 3)
	h.net.Isolate(2)
	h.send(1, 2, "x")
	h.send(2, 3, "x")
	h.send(1, 3, "ok")
	expectLog(t, h.drain(), "3<-1:ok@0s")
	h.net.Heal()
	h.send(2, 3, "healed")
	expectLog(t, h.drain(), "3<-2:healed@0s")
}

func TestSimDetachAndRestart(t *testing.T) {
	h := newSimHarness(t, 10, 1, 2)
	h.net.SetDefaultFaults(LinkFaults{DelayMin: time.Second, DelayMax: time.Second})
	old := h.nodes[2]
	h.send(1, 2, "in-flight-at-crash")
	h.sim.RunFor(time.Millisecond)
	h.net.Detach(2)
	old.Send(1, []byte("from-crashed-node"))
	h.send(1, 2, "while-down")
	h.sim.RunFor(100 * time.Millisecond)
	h.start(2) // restart before either message would arrive
	old.Send(1, []byte("from-old-incarnation"))
	h.send(1, 2, "after-restart")
	h.send(2, 1, "new-incarnation")
	expectLog(t, h.drain(), "2<-1:after-restart@1.101s", "1<-2:new-incarnation@1.101s")
	if s := h.checkStats(); s.Dropped != 4 {
		t.Fatalf("stats %+v, want 4 dropped", s)
	}
}

// runChaos drives a three-node ping-pong workload under every fault and
// returns the delivery log.
func runChaos(seed int64) ([]string, SimNetStats) {
	sim := clock.NewSim(time.Unix(0, 0))
	net := NewSimNetwork(sim, rand.New(rand.NewSource(seed)))
	net.SetDefaultFaults(LinkFaults{DropProb: 0.1, DupProb: 0.1, ReorderProb: 0.2,
		DelayMin: time.Millisecond, DelayMax: 30 * time.Millisecond})
	var log []string
	nodes := map[NodeID]Transport{}
	for id := NodeID(1); id <= 3; id++ {
		nodes[id] = net.Endpoint(id, func(from NodeID, msg []byte) {
			log = append(log, fmt.Sprintf("%v %d<-%d %s", sim.Monotonic(), id, from, msg))
			if len(msg) < 6 { // echo onwards a few hops
				nodes[id].Send(id%3+1, append(msg, 'x'))
			}
		})
	}
	for i := range 300 {
		from := NodeID(i%3 + 1)
		nodes[from].Send((from+NodeID(i))%3+1, []byte{byte('a' + i%26)})
		sim.RunFor(3 * time.Millisecond)
		switch i {
		case 100:
			net.Partition([]NodeID{1}, []NodeID{2, 3})
		case 150:
			net.SetLinkFaults(2, 3, LinkFaults{Clogged: true})
			net.Cut(3, 1)
		case 200:
			net.Heal()
		}
	}
	for sim.Step() {
	}
	return log, net.Stats()
}

func TestSimDeterminism(t *testing.T) {
	hash := func(log []string) string {
		return fmt.Sprintf("%x", sha256.Sum256([]byte(strings.Join(log, "\n"))))
	}
	a, sa := runChaos(42)
	b, sb := runChaos(42)
	c, _ := runChaos(43)
	if len(a) < 300 {
		t.Fatalf("chaos run delivered only %d messages", len(a))
	}
	if hash(a) != hash(b) || sa != sb {
		t.Fatal("same seed, different delivery sequence")
	}
	if hash(a) == hash(c) {
		t.Fatal("different seeds, same delivery sequence")
	}
	if sa.Sent+sa.Duplicated != sa.Delivered+sa.Dropped || sa.InFlight != 0 {
		t.Fatalf("stats after drain %+v", sa)
	}
	if sa.Dropped == 0 || sa.Duplicated == 0 {
		t.Fatalf("faults never fired: %+v", sa)
	}
}
