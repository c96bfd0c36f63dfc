package runtime

import (
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/logstore"
)

// roundSink records the size of each group-commit round.
type roundSink struct {
	mu     sync.Mutex
	rounds []int
}

func (s *roundSink) ObserveSync(_ time.Duration, plans int) {
	s.mu.Lock()
	s.rounds = append(s.rounds, plans)
	s.mu.Unlock()
}

func (s *roundSink) get() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.rounds...)
}

// pendingPlan returns a sync plan for a log on its own SimFS holding an
// unsynced entry; failWith, if not nil, makes that plan's fsync fail.
func pendingPlan(t *testing.T, seed int64, failWith error) (*logstore.Log, *logstore.SyncPlan) {
	t.Helper()
	fs := logstore.NewSimFS(rand.New(rand.NewSource(seed)))
	log, _, err := logstore.Open(fs, "p", logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Append(logstore.Entry{Index: 1, Term: 1, Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if failWith != nil {
		fs.FailNext(logstore.OpSync, "", failWith)
	}
	p := log.PrepareSync()
	if p == nil {
		t.Fatalf("no sync plan for an unsynced entry")
	}
	return log, p
}

// reactor stands in for the reactor's loop: the disk posts completions to
// it, and the test runs them. While hold is open, a post does not return
// until hold is closed, which keeps the worker inside its round.
type reactor struct {
	posted chan func()
	hold   chan struct{}
}

func (r *reactor) post(fn func()) {
	r.posted <- fn
	if r.hold != nil {
		<-r.hold
	}
}

// completion records how one Sync request ended.
type completion struct {
	name string
	err  error
}

// A request submitted while a round is in flight waits for the next round,
// which takes every waiting request at once; each request hears the first
// error among its own plans, not its neighbours'.
func TestDiskGroupsRequestsAndReportsEachOwnError(t *testing.T) {
	errX, errY := errors.New("disk X"), errors.New("disk Y")
	sink := &roundSink{}
	r := &reactor{posted: make(chan func()), hold: make(chan struct{})}
	d := newDisk(r.post, sink)
	defer d.stop()

	var done []completion
	cb := func(name string) func(error) {
		return func(err error) { done = append(done, completion{name, err}) }
	}
	logA, pA := pendingPlan(t, 1, nil)
	d.Sync([]*logstore.SyncPlan{pA}, cb("A"))
	// The worker finished round 1 and is held posting A's completion:
	// everything submitted now queues for round 2.
	var first func()
	select {
	case first = <-r.posted:
	case <-time.After(waitTimeout):
		t.Fatalf("no completion for A")
	}
	_, pB := pendingPlan(t, 2, nil)
	_, pC1 := pendingPlan(t, 3, nil)
	_, pC2 := pendingPlan(t, 4, errX)
	_, pC3 := pendingPlan(t, 5, errY)
	_, pD := pendingPlan(t, 6, errY)
	d.Sync([]*logstore.SyncPlan{pB}, cb("B"))
	d.Sync([]*logstore.SyncPlan{pC1, pC2, pC3}, cb("C")) // first error: X
	d.Sync(nil, cb("empty"))
	d.Sync([]*logstore.SyncPlan{pD}, cb("D"))
	close(r.hold)
	first()
	for len(done) < 5 {
		select {
		case fn := <-r.posted:
			fn()
		case <-time.After(waitTimeout):
			t.Fatalf("only %d of 5 requests completed: %v", len(done), done)
		}
	}
	want := []completion{{"A", nil}, {"B", nil}, {"C", errX}, {"empty", nil}, {"D", errY}}
	for i := range want {
		ok := done[i].name == want[i].name && errors.Is(done[i].err, want[i].err)
		if want[i].err == nil {
			ok = ok && done[i].err == nil
		}
		if !ok {
			t.Fatalf("completion %d: %s %v, want %s %v (all: %v)", i, done[i].name, done[i].err, want[i].name, want[i].err, done)
		}
	}
	if got := sink.get(); fmt.Sprint(got) != "[1 5]" {
		t.Fatalf("rounds of %v plans, want [1 5]: everything submitted during round 1 shares round 2", got)
	}
	// The plans really ran: A's log can finish its sync.
	logA.FinishSync(pA, nil)
	if logA.DurableIndex() != 1 {
		t.Fatalf("durable index %d after A's sync", logA.DurableIndex())
	}
}

// More plans than run in parallel in one round all run, and the request
// that owns the failing one hears of it.
func TestDiskManyPlans(t *testing.T) {
	errZ := errors.New("disk Z")
	r := &reactor{posted: make(chan func(), 64)}
	d := newDisk(r.post, nil)
	defer d.stop()
	var plans []*logstore.SyncPlan
	var logs []*logstore.Log
	for i := 0; i < 3*parallelMax; i++ {
		var fail error
		if i == 2*parallelMax+1 {
			fail = errZ
		}
		log, p := pendingPlan(t, int64(i), fail)
		logs, plans = append(logs, log), append(plans, p)
	}
	results := map[string]error{}
	d.Sync(plans[:parallelMax], func(err error) { results["first"] = err })
	d.Sync(plans[parallelMax:], func(err error) { results["rest"] = err })
	for len(results) < 2 {
		select {
		case fn := <-r.posted:
			fn()
		case <-time.After(waitTimeout):
			t.Fatalf("completions: %v", results)
		}
	}
	if results["first"] != nil || !errors.Is(results["rest"], errZ) {
		t.Fatalf("results %v; want first nil, rest %v", results, errZ)
	}
	for i, p := range plans[:parallelMax] {
		logs[i].FinishSync(p, nil)
		if logs[i].DurableIndex() != 1 {
			t.Fatalf("log %d not durable", i)
		}
	}
}

// stop returns once the worker has exited, even with nothing to do.
func TestDiskStop(t *testing.T) {
	d := newDisk(func(fn func()) { fn() }, nil)
	stopped := make(chan struct{})
	go func() { d.stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(waitTimeout):
		t.Fatalf("stop did not return")
	}
}

// With two rounds allowed, a request submitted while a round is still in
// progress (here held posting its completion) runs at once in a second
// round instead of waiting for the first to end (pipelined rounds: the
// reactor completes them in order, node/ready.go).
func TestDiskRunsTwoRoundsAtOnce(t *testing.T) {
	r := &reactor{posted: make(chan func(), 4), hold: make(chan struct{})}
	d := newDiskRounds(r.post, nil, 2)
	defer d.stop()
	released := false
	defer func() {
		if !released {
			close(r.hold) // let the held round end, so that stop returns
		}
	}()
	var done []string
	_, pA := pendingPlan(t, 1, nil)
	_, pB := pendingPlan(t, 2, nil)
	d.Sync([]*logstore.SyncPlan{pA}, func(error) { done = append(done, "A") })
	var first, second func()
	select {
	case first = <-r.posted:
	case <-time.After(waitTimeout):
		t.Fatalf("no completion for A")
	}
	d.Sync([]*logstore.SyncPlan{pB}, func(error) { done = append(done, "B") })
	select {
	case second = <-r.posted:
	case <-time.After(waitTimeout):
		t.Fatalf("B did not run while A's round was still in progress")
	}
	close(r.hold)
	released = true
	first()
	second()
	if fmt.Sprint(done) != "[A B]" {
		t.Fatalf("completions %v", done)
	}
}
