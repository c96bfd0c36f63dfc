package runtime

import (
	"sync"
	"testing"
	"time"
)

// waitTimeout bounds how long a test waits for something that must
// happen; it is a hang guard, not a speed assertion.
const waitTimeout = 20 * time.Second

func startLoop(t *testing.T) *loop {
	l := newLoop()
	runLoop(t, l)
	return l
}

// runLoop starts l and stops it when the test ends.
func runLoop(t *testing.T, l *loop) {
	go l.run()
	t.Cleanup(func() {
		select {
		case <-l.done:
		default:
			l.stop()
		}
	})
}

// barrier waits until every event posted before it has run.
func barrier(t *testing.T, l *loop) {
	t.Helper()
	if !l.call(func() {}, waitTimeout) {
		t.Fatalf("loop did not answer")
	}
}

// Events run one at a time in the order posted, including events posted
// by events (they go to the back of the queue). Everything is queued before
// the loop starts, so the order is fully determined.
func TestLoopOrder(t *testing.T) {
	l := newLoop()
	var got []int // touched only on the loop: the race detector checks that
	want := []int{}
	for i := 0; i < 200; i++ {
		i := i
		want = append(want, i)
		l.post(func() {
			got = append(got, i)
			if i%50 == 0 {
				l.post(func() { got = append(got, 1000+i) })
				l.After(0, func() { got = append(got, 2000+i) })
			}
		})
	}
	for _, i := range []int{0, 50, 100, 150} {
		want = append(want, 1000+i, 2000+i)
	}
	runLoop(t, l)
	barrier(t, l)
	barrier(t, l) // events posted by events run after the first barrier
	if len(got) != len(want) {
		t.Fatalf("ran %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("event %d was %d, want %d (order %v)", i, got[i], want[i], got)
		}
	}
}

// Posting from many goroutines: every event runs exactly once, and each
// goroutine's events keep their order.
func TestLoopConcurrentPosts(t *testing.T) {
	l := startLoop(t)
	const posters, each = 8, 200
	last := make([]int, posters)
	for i := range last {
		last[i] = -1
	}
	count := 0
	var wg sync.WaitGroup
	for p := 0; p < posters; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				l.post(func() {
					if last[p] != i-1 {
						t.Errorf("poster %d: event %d after %d", p, i, last[p])
					}
					last[p] = i
					count++
				})
			}
		}()
	}
	wg.Wait()
	barrier(t, l)
	if count != posters*each {
		t.Fatalf("%d events ran, want %d", count, posters*each)
	}
}

// After with a delay runs the function later, on the loop.
func TestLoopAfterDelay(t *testing.T) {
	l := startLoop(t)
	ran := make(chan struct{})
	onLoop := false
	var mine int // written only by events: the race detector checks they are on the loop
	l.After(time.Millisecond, func() {
		mine++
		onLoop = true
		close(ran)
	})
	l.post(func() { mine++ })
	select {
	case <-ran:
	case <-time.After(waitTimeout):
		t.Fatalf("After(1ms) never ran")
	}
	barrier(t, l)
	if !onLoop || mine != 2 {
		t.Fatalf("onLoop %v, events %d", onLoop, mine)
	}
}

// call gives up when the loop is stuck, and reports false once the loop
// has stopped.
func TestLoopCall(t *testing.T) {
	l := startLoop(t)
	ran := false
	if !l.call(func() { ran = true }, waitTimeout) || !ran {
		t.Fatalf("call did not run its function")
	}
	release := make(chan struct{})
	l.post(func() { <-release })
	if l.call(func() {}, 10*time.Millisecond) {
		t.Fatalf("call returned true while the loop was stuck")
	}
	close(release)
	barrier(t, l)
	l.stop()
	if l.call(func() { t.Errorf("ran after stop") }, waitTimeout) {
		t.Fatalf("call returned true after stop")
	}
	l.post(func() { t.Errorf("posted event ran after stop") })
	l.After(0, func() { t.Errorf("After(0) ran after stop") })
}

// stop "ends run after the event in progress": events queued behind it
// do not run.
func TestLoopStopAfterEventInProgress(t *testing.T) {
	l := newLoop()
	entered, release := make(chan struct{}), make(chan struct{})
	l.post(func() { close(entered); <-release })
	l.post(func() { t.Errorf("an event queued behind the one in progress ran after stop") })
	go l.run()
	<-entered
	stopped := make(chan struct{})
	go func() { l.stop(); close(stopped) }()
	for {
		l.mu.Lock()
		s := l.stopped
		l.mu.Unlock()
		if s {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	<-stopped
}
