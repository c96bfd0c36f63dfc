package runtime

import (
	"sync"
	"time"
)

// loop is the reactor's event queue: an unbounded FIFO of functions run by
// one goroutine. Unbounded, because the reactor posts to itself (After(0))
// and must never block doing so; admission control happens at the edges
// (the Kafka server caps requests in flight per connection, the transport
// caps its queues).
type loop struct {
	mu      sync.Mutex
	queue   []func()
	wake    chan struct{}
	stopped bool
	done    chan struct{}
}

func newLoop() *loop {
	return &loop{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// post queues fn; it is dropped once the loop has stopped.
func (l *loop) post(fn func()) {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	l.queue = append(l.queue, fn)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// After implements clock.Scheduler.
func (l *loop) After(d time.Duration, fn func()) {
	if d <= 0 {
		l.post(fn)
		return
	}
	time.AfterFunc(d, func() { l.post(fn) })
}

// call runs fn on the loop and waits for it, up to timeout.
func (l *loop) call(fn func(), timeout time.Duration) bool {
	ch := make(chan struct{})
	l.post(func() { fn(); close(ch) })
	select {
	case <-ch:
		return true
	case <-time.After(timeout):
		return false
	case <-l.done:
		return false
	}
}

// run executes events until stop.
func (l *loop) run() {
	defer close(l.done)
	var batch []func()
	for {
		<-l.wake
		for {
			l.mu.Lock()
			if l.stopped {
				l.mu.Unlock()
				return
			}
			batch, l.queue = l.queue, batch[:0]
			l.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			for i, fn := range batch {
				if l.isStopped() {
					return
				}
				fn()
				batch[i] = nil
			}
		}
	}
}

func (l *loop) isStopped() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stopped
}

// stop ends run after the event in progress.
func (l *loop) stop() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	<-l.done
}
