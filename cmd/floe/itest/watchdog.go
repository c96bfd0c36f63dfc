package itest

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The watchdog turns a hung test into a failure with evidence (issue 24).
//
// A test that drives real brokers can block where no wait of its own is
// bounded: inside a client library, say, in a call that honours none of its
// timeouts. Left alone it runs into go test's -timeout, which panics with
// the goroutines of the test binary but without the brokers' logs (the
// tests' cleanups never run), after 20 minutes of `make test`. Each test
// that starts a broker gets a watchdog instead: if the test is still running
// at its bound, the watchdog prints the log tail of every broker the test
// started and every goroutine's stack, kills the brokers and exits the
// test binary with a failure.
//
// The bound is testWaitMax (testWaitMaxLong in the long run, or
// FLOE_ITEST_BOUND, a Go duration), cut so that it passes a minute before
// the test binary's own -timeout when that is nearer.

// testWatch is the watchdog of one test.
type testWatch struct {
	name  string
	bound time.Duration
	done  chan struct{}

	mu      sync.Mutex
	brokers []*Broker
}

var (
	watchesMu sync.Mutex
	watches   = map[testing.TB]*testWatch{}
	// longer holds the bounds of tests that asked for more than
	// testWaitMax (allowLonger).
	longer = map[testing.TB]time.Duration{}
)

// allowLonger bounds t by d instead of testWaitMax: for a test whose own
// bounded waits add up to more, which a loaded machine may spend without
// hanging. Call it before the test starts a broker. FLOE_ITEST_BOUND and
// the test binary's -timeout still cut it.
func allowLonger(t testing.TB, d time.Duration) {
	watchesMu.Lock()
	defer watchesMu.Unlock()
	if watches[t] != nil {
		t.Fatalf("allowLonger after the watchdog started")
	}
	longer[t] = d
	t.Cleanup(func() {
		watchesMu.Lock()
		delete(longer, t)
		watchesMu.Unlock()
	})
}

// watch returns t's watchdog, starting it on the first call.
func watch(t testing.TB) *testWatch {
	watchesMu.Lock()
	defer watchesMu.Unlock()
	if w := watches[t]; w != nil {
		return w
	}
	w := &testWatch{name: t.Name(), bound: testBound(t), done: make(chan struct{})}
	watches[t] = w
	t.Cleanup(func() {
		close(w.done)
		watchesMu.Lock()
		delete(watches, t)
		watchesMu.Unlock()
	})
	go w.run()
	return w
}

// testBound is how long t may run.
func testBound(t testing.TB) time.Duration {
	bound := testWaitMax
	if os.Getenv("FLOE_ITEST_LONG") == "1" {
		bound = testWaitMaxLong
	}
	bound = max(bound, longer[t]) // watch holds watchesMu
	if s := os.Getenv("FLOE_ITEST_BOUND"); s != "" {
		if d, err := time.ParseDuration(s); err == nil && d > 0 {
			bound = d
		}
	}
	if dt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if deadline, ok := dt.Deadline(); ok {
			left := time.Until(deadline)
			bound = min(bound, max(left-time.Minute, left/2))
		}
	}
	return bound
}

func (w *testWatch) add(b *Broker) {
	w.mu.Lock()
	w.brokers = append(w.brokers, b)
	w.mu.Unlock()
}

func (w *testWatch) run() {
	timer := time.NewTimer(w.bound)
	defer timer.Stop()
	select {
	case <-w.done:
	case <-timer.C:
		w.fire()
	}
}

// fire reports the hang and ends the test binary.
func (w *testWatch) fire() {
	w.mu.Lock()
	brokers := append([]*Broker(nil), w.brokers...)
	w.mu.Unlock()
	var out strings.Builder
	fmt.Fprintf(&out, "\n--- FAIL: %s: still running after %v, a hang: the log tails of its brokers and every goroutine follow\n", w.name, w.bound)
	for _, b := range brokers {
		fmt.Fprintf(&out, "=== broker %d (kafka %s, running %v, exits %v); log tail:\n%s\n", b.NodeID, b.KafkaAddr, b.Running(), b.Exits(), b.LogTail())
	}
	buf := make([]byte, 16<<20)
	buf = buf[:runtime.Stack(buf, true)]
	fmt.Fprintf(&out, "=== goroutines of the test binary:\n%s\n", buf)
	fmt.Fprintf(&out, "FAIL: %s hung (bound %v)\n", w.name, w.bound)
	os.Stderr.WriteString(out.String())
	for _, b := range brokers {
		b.send(syscall.SIGKILL) // without waiting: the test binary exits now
	}
	os.Exit(1)
}
