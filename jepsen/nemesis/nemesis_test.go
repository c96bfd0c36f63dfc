package nemesis

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/jepsen/cluster"
)

// fakeFaults records what the nemesis asks for.
type fakeFaults struct {
	mu    sync.Mutex
	calls []string
	n     int
}

func (f *fakeFaults) note(s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
	return nil
}
func (f *fakeFaults) Kill(_ context.Context, id int) error { return f.note(fmt.Sprint("kill ", id)) }
func (f *fakeFaults) Restart(_ context.Context, id int) error {
	return f.note(fmt.Sprint("restart ", id))
}
func (f *fakeFaults) Pause(_ context.Context, id int) error { return f.note(fmt.Sprint("pause ", id)) }
func (f *fakeFaults) Resume(_ context.Context, id int) error {
	return f.note(fmt.Sprint("resume ", id))
}
func (f *fakeFaults) Heal(context.Context) error { return f.note("heal") }
func (f *fakeFaults) Partition(_ context.Context, g cluster.Grudge) error {
	return f.note(fmt.Sprint("partition ", len(g)))
}
func (f *fakeFaults) Nodes() []*cluster.Node {
	var out []*cluster.Node
	for i := 1; i <= f.n; i++ {
		out = append(out, &cluster.Node{ID: i})
	}
	return out
}

func TestGroups(t *testing.T) {
	ids := []int{1, 2, 3, 4, 5}
	for seed := int64(0); seed < 20; seed++ {
		for _, victim := range ids {
			rnd := rand.New(rand.NewSource(seed))
			one := Groups(PartitionOne, ids, victim, rnd)
			if len(one[0]) != 1 || one[0][0] != victim || len(one[1]) != 4 {
				t.Fatalf("partition-one %v", one)
			}
			half := Groups(PartitionHalf, ids, victim, rnd)
			if len(half[0]) != 2 || len(half[1]) != 3 || !contains(half[0], victim) || overlap(half[0], half[1]) {
				t.Fatalf("partition-half %v", half)
			}
			br := Groups(PartitionBridge, ids, victim, rnd)
			common := intersect(br[0], br[1])
			if len(common) != 1 || !contains(br[0], victim) || len(br[0])+len(br[1]) != 6 || common[0] == victim {
				t.Fatalf("partition-bridge %v", br)
			}
			g := cluster.Components(ids, br...)
			if len(g[common[0]]) != 0 {
				t.Fatalf("bridge %d drops packets from %v", common[0], g[common[0]])
			}
		}
	}
	if g := Groups(PartitionHalf, []int{1}, 1, rand.New(rand.NewSource(1))); len(g[0]) != 1 {
		t.Fatalf("one node: %v", g)
	}
}

func TestComponentsGrudge(t *testing.T) {
	g := cluster.Components([]int{1, 2, 3}, []int{1}, []int{2, 3})
	if fmt.Sprint(g[1]) != "[2 3]" || fmt.Sprint(g[2]) != "[1]" || fmt.Sprint(g[3]) != "[1]" {
		t.Fatalf("grudge %v", g)
	}
}

func TestScheduleInjectsAndHeals(t *testing.T) {
	f := &fakeFaults{n: 5}
	var clock int64
	var mu sync.Mutex
	now := func() int64 { mu.Lock(); defer mu.Unlock(); clock++; return clock }
	n, err := New(Config{Kinds: AllKinds, Interval: time.Millisecond, Window: time.Millisecond, Seed: 3}, f, nil, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(n.Timeline()) < 12 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	n.Run(ctx)
	tl := n.Timeline()
	kinds := map[Kind]bool{}
	for _, ev := range tl {
		kinds[ev.Kind] = true
		if ev.End == 0 || ev.End < ev.Start {
			t.Fatalf("fault not healed: %+v", ev)
		}
	}
	if len(kinds) < 3 {
		t.Errorf("12 faults used only kinds %v", kinds)
	}
	// Every kill is followed by a restart, every pause by a resume, and
	// the last word is a heal of whatever was last injected.
	f.mu.Lock()
	defer f.mu.Unlock()
	open := map[string]int{}
	for _, c := range f.calls {
		switch {
		case strings.HasPrefix(c, "kill"), strings.HasPrefix(c, "pause"), strings.HasPrefix(c, "partition"):
			open[c[:strings.Index(c, " ")]]++
		case strings.HasPrefix(c, "restart"):
			open["kill"]--
		case strings.HasPrefix(c, "resume"):
			open["pause"]--
		case c == "heal":
			open["partition"] = 0
		}
	}
	if open["kill"] != 0 || open["pause"] != 0 || open["partition"] != 0 {
		t.Fatalf("faults left in force: %v\n%v", open, f.calls)
	}
}

func TestMembershipNeedsHook(t *testing.T) {
	if _, err := New(Config{Kinds: []Kind{Membership}}, &fakeFaults{n: 3}, nil, nil, nil); err == nil {
		t.Fatal("membership without a hook accepted")
	}
	if _, err := New(Config{Kinds: []Kind{"flood"}}, &fakeFaults{n: 3}, nil, nil, nil); err == nil {
		t.Fatal("unknown kind accepted")
	}
}

func TestTargetsLeaderAndController(t *testing.T) {
	f := &fakeFaults{n: 5}
	topo := func(context.Context) (int32, []int32, error) { return 4, []int32{2, 2}, nil }
	n, err := New(Config{Kinds: []Kind{Kill}, Targets: []Target{Controller}}, f, topo, nil, func() int64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := n.pick(context.Background(), Controller); v != 4 {
		t.Errorf("controller target picked %d", v)
	}
	if v, _ := n.pick(context.Background(), Leader); v != 2 {
		t.Errorf("leader target picked %d", v)
	}
	if _, err := New(Config{Kinds: []Kind{Kill}, Targets: []Target{Coordinator}}, f, topo, nil, nil); err == nil {
		t.Error("coordinator target without Coordinators accepted")
	}
	coords := func(context.Context) ([]int32, error) { return []int32{3}, nil }
	n, err = New(Config{Kinds: []Kind{Kill}, Targets: []Target{Coordinator}, Coordinators: coords}, f, topo, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := n.pick(context.Background(), Coordinator); v != 3 {
		t.Errorf("coordinator target picked %d", v)
	}
}

func contains(s []int, x int) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func overlap(a, b []int) bool { return len(intersect(a, b)) > 0 }

func intersect(a, b []int) []int {
	var out []int
	for _, x := range a {
		if contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
