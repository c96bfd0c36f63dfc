package world

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/netx"
)

// probe is a scripted node: it logs what it handles and runs whatever the
// test schedules through its Env.
type probe struct {
	env     Env
	inc     int
	log     *[]string
	stopped *int
}

func (p *probe) Handle(from netx.NodeID, msg []byte) {
	*p.log = append(*p.log, fmt.Sprintf("n%d.%d got %s from n%d at %v", p.env.ID, p.inc, msg, from, p.env.Clock.Monotonic()))
}

func (p *probe) Stop() { *p.stopped++ }

// probeWorld builds a world of probes on a perfect network with a fixed 1ms
// latency. probes[id] is each node's current instance.
type probeWorld struct {
	*World
	log     []string
	stopped int
	boots   map[netx.NodeID]int
	probes  map[netx.NodeID]*probe
}

func newProbeWorld(t *testing.T, nodes int) *probeWorld {
	t.Helper()
	pw := &probeWorld{boots: map[netx.NodeID]int{}, probes: map[netx.NodeID]*probe{}}
	pw.World = New(Config{Seed: 1, Nodes: nodes, Faults: netx.LinkFaults{DelayMin: time.Millisecond, DelayMax: time.Millisecond}},
		func(env Env) Instance {
			pw.boots[env.ID]++
			p := &probe{env: env, inc: pw.boots[env.ID], log: &pw.log, stopped: &pw.stopped}
			pw.probes[env.ID] = p
			return p
		})
	return pw
}

// timer schedules a logged callback on node id's current incarnation.
func (pw *probeWorld) timer(id netx.NodeID, d time.Duration, name string) {
	p := pw.probes[id]
	p.env.Sched.After(d, func() {
		pw.log = append(pw.log, fmt.Sprintf("n%d.%d timer %s at %v", id, p.inc, name, p.env.Clock.Monotonic()))
	})
}

func (pw *probeWorld) send(from, to netx.NodeID, msg string) {
	pw.probes[from].env.Net.Send(to, []byte(msg))
}

func wantLog(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("log:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

func TestCrashDropsEverythingOfTheOldIncarnation(t *testing.T) {
	w := newProbeWorld(t, 2)
	w.timer(2, 10*time.Millisecond, "old")
	w.RunFor(5 * time.Millisecond)
	w.send(1, 2, "lost") // in flight when n2 crashes
	w.Crash(2)
	if w.Up(2) || w.Instance(2) != nil {
		t.Fatal("n2 still up after Crash")
	}
	w.Restart(2)
	w.timer(2, 10*time.Millisecond, "new")
	w.send(1, 2, "kept")
	w.RunFor(20 * time.Millisecond)
	wantLog(t, w.log,
		"n2.2 got kept from n1 at 6ms",
		"n2.2 timer new at 15ms")
	if w.stopped != 0 {
		t.Errorf("Crash called Stop %d times; a crash is not a clean stop", w.stopped)
	}
	if got := w.Incarnation(2); got != 2 {
		t.Errorf("Incarnation(2) = %d, want 2", got)
	}
	if !slices.ContainsFunc(w.Trace(), func(l string) bool { return strings.HasSuffix(l, "n2.1 timer: gone") }) {
		t.Error("trace does not show the old incarnation's timer as gone")
	}
}

func TestPauseHoldsAndReplaysInOrder(t *testing.T) {
	w := newProbeWorld(t, 2)
	w.timer(2, 2*time.Millisecond, "t1")
	w.Pause(2)
	w.send(1, 2, "a")
	w.timer(2, 1500*time.Microsecond, "t0")
	w.RunFor(time.Millisecond / 2)
	w.send(1, 2, "b")
	w.RunFor(10 * time.Millisecond)
	if len(w.log) != 0 {
		t.Fatalf("paused node ran events: %q", w.log)
	}
	if !w.Paused(2) || !w.Up(2) {
		t.Fatal("n2 should be up and paused")
	}
	w.Resume(2)
	w.RunFor(time.Millisecond)
	// Held in the order they came due: a at 1ms, t0 at 1.5ms, b at 1.5ms
	// (scheduled after t0), t1 at 2ms; all replayed at 10.5ms.
	wantLog(t, w.log,
		"n2.1 got a from n1 at 10.5ms",
		"n2.1 timer t0 at 10.5ms",
		"n2.1 got b from n1 at 10.5ms",
		"n2.1 timer t1 at 10.5ms")
}

func TestCrashWhilePausedDropsHeldEvents(t *testing.T) {
	w := newProbeWorld(t, 2)
	w.Pause(2)
	w.timer(2, time.Millisecond, "held")
	w.RunFor(2 * time.Millisecond)
	w.Restart(2) // crashes first
	w.Resume(2)  // not paused any more: ignored
	w.RunFor(5 * time.Millisecond)
	wantLog(t, w.log)
	if w.Paused(2) {
		t.Error("a restarted node is not paused")
	}
}

func TestStopIsCleanAndRestartable(t *testing.T) {
	w := newProbeWorld(t, 1)
	w.timer(1, time.Millisecond, "after-stop")
	w.Stop(1)
	w.Stop(1) // already down: ignored
	if w.stopped != 1 {
		t.Errorf("Stop called Instance.Stop %d times, want 1", w.stopped)
	}
	w.RunFor(2 * time.Millisecond)
	wantLog(t, w.log)
	w.Restart(1)
	if !w.Up(1) || w.Incarnation(1) != 2 {
		t.Errorf("after Restart: up=%v incarnation=%d", w.Up(1), w.Incarnation(1))
	}
}

func TestPartitionAndHealAreTraced(t *testing.T) {
	w := newProbeWorld(t, 3)
	w.Partition([]netx.NodeID{1}, []netx.NodeID{2, 3})
	w.send(1, 2, "blocked")
	w.send(2, 3, "same-side")
	w.RunFor(2 * time.Millisecond)
	w.Heal()
	w.send(1, 2, "healed")
	w.RunFor(2 * time.Millisecond)
	wantLog(t, w.log,
		"n3.1 got same-side from n2 at 1ms",
		"n2.1 got healed from n1 at 3ms")
	trace := strings.Join(w.Trace(), "\n")
	for _, want := range []string{"fault partition [1] | [2 3]", "fault heal"} {
		if !strings.Contains(trace, want) {
			t.Errorf("trace lacks %q", want)
		}
	}
}

func TestBadNodeIDsAreIgnored(t *testing.T) {
	w := newProbeWorld(t, 1)
	before := w.TraceHash()
	for _, id := range []netx.NodeID{0, 2, 99} {
		w.Crash(id)
		w.Restart(id)
		w.Pause(id)
		w.Resume(id)
		w.Stop(id)
		if w.Up(id) || w.FS(id) != nil || w.NodeClock(id) != nil || w.Instance(id) != nil {
			t.Errorf("node %d should not exist", id)
		}
	}
	if w.TraceHash() == before {
		t.Error("ignored faults should still be traced")
	}
	if !w.Up(1) {
		t.Error("n1 went down")
	}
}

func TestRunUntil(t *testing.T) {
	w := newProbeWorld(t, 2)
	w.send(1, 2, "x")
	if !w.RunUntil(func() bool { return len(w.log) == 1 }, time.Second) {
		t.Fatal("RunUntil gave up before the delivery")
	}
	if got := w.Clock().Monotonic(); got != time.Millisecond {
		t.Errorf("stopped at %v, want 1ms (the delivery)", got)
	}
	if w.RunUntil(func() bool { return false }, 50*time.Millisecond) {
		t.Fatal("RunUntil reported a false predicate as true")
	}
	if got := w.Clock().Monotonic(); got != 51*time.Millisecond {
		t.Errorf("gave up at %v, want 51ms", got)
	}
}

func TestNodeClockSkew(t *testing.T) {
	w := newProbeWorld(t, 2)
	w.SkewClock(2, -time.Hour)
	c1, c2 := w.probes[1].env.Clock, w.probes[2].env.Clock
	if d := c1.Now().Sub(c2.Now()); d != time.Hour {
		t.Errorf("n1 - n2 wall clock = %v, want 1h", d)
	}
	if c1.Monotonic() != c2.Monotonic() {
		t.Error("skew reached the monotonic clock")
	}
	if !c1.Now().Equal(DefaultStart) {
		t.Errorf("n1 wall clock = %v, want %v", c1.Now(), DefaultStart)
	}
}

func TestAddNodeJoinsTheNetwork(t *testing.T) {
	w := newProbeWorld(t, 2)
	id := w.AddNode()
	if id != 3 || !w.Up(3) || w.FS(3) == nil || len(w.IDs()) != 3 || w.boots[3] != 1 {
		t.Fatalf("added n%d: up %v, ids %v, boots %d", id, w.Up(3), w.IDs(), w.boots[3])
	}
	w.send(1, 3, "hello")
	w.send(3, 2, "hi")
	w.RunFor(5 * time.Millisecond)
	wantLog(t, w.log, "n3.1 got hello from n1 at 1ms", "n2.1 got hi from n3 at 1ms")
	w.Crash(3)
	w.Restart(3)
	if w.Incarnation(3) != 2 || !w.Up(3) {
		t.Fatalf("n3 after a crash and restart: incarnation %d, up %v", w.Incarnation(3), w.Up(3))
	}
}

// The trace's time prefix is "%d.%09d" of seconds and nanoseconds, as
// traces of earlier builds have it (their hashes stay comparable).
func TestAppendTimeFormat(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 999, time.Millisecond, time.Second - 1, time.Second, 3*time.Second + 7, 612*time.Second + 123456789} {
		want := fmt.Sprintf("%d.%09d", d/time.Second, d%time.Second)
		if got := string(appendTime([]byte("x"), d)); got != "x"+want {
			t.Errorf("appendTime(%v) = %q, want %q", d, got, "x"+want)
		}
	}
}
