package node

// Request deadlines: no client request parks past its timeout (issue 24).
//
// Every request its handler does not answer at once gets a deadline when
// the handler returns: the request's own timeout (Produce's and the admin
// APIs' timeout_ms, Fetch's max wait, ...) or requestTimeoutDefault for an
// API that carries none (requestBudget, expire.go). If the handler has not
// answered by then, the reactor answers for it with the API's expiry answer
// (expiredAnswer: REQUEST_TIMED_OUT on every topic, partition or resource,
// or the code the API's clients expect instead) and drops the handler's own
// answer when it comes. Handlers still answer their own timeouts where they
// can say more (a Produce marks only the partitions still waiting, a Fetch
// returns what is committed); the deadline is the bound that holds even when
// a handler waits for something that never finishes: a controller or a
// partition without a quorum.
//
// Timers live on the reactor's clock.Deadlines queue, woken by one
// Sched.After armed for the earliest of them. They fire in (time, order
// added) order, so a handler's own timer (added while it ran) fires before
// its request's deadline (added after it returned) when both are due at the
// same instant, in the simulator and in production alike.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/clock"
)

// deadlineQueue is the reactor's timers and their wake-up.
//
// Invariant: when the queue is not empty, a wake-up is armed at or before
// its earliest timer (wakeArmed, wakeAt).
type deadlineQueue struct {
	queue     *clock.Deadlines
	wakeArmed bool
	wakeAt    time.Duration // monotonic time of the earliest armed wake-up
}

// after runs fn on the reactor d from now, through the deadline queue. The
// returned id cancels it (cancelTimer).
func (r *Reactor) after(d time.Duration, fn func()) clock.TimerID {
	id := r.timers.queue.Add(r.env.Clock.Monotonic()+max(d, 0), fn)
	r.armTimers()
	return id
}

// cancelTimer stops a timer from running; a timer that already ran is left
// alone.
func (r *Reactor) cancelTimer(id clock.TimerID) { r.timers.queue.Cancel(id) }

// armTimers arms a wake-up for the earliest timer unless one is armed at or
// before it. A wake-up that finds nothing due re-arms; extra wake-ups only
// cost an empty Fire.
func (r *Reactor) armTimers() {
	at, ok := r.timers.queue.Next()
	if !ok || (r.timers.wakeArmed && r.timers.wakeAt <= at) {
		return
	}
	r.timers.wakeArmed, r.timers.wakeAt = true, at
	r.env.Sched.After(at-r.env.Clock.Monotonic(), func() { r.fireTimers(at) })
}

// fireTimers is a wake-up: it runs the timers due now and arms the next.
func (r *Reactor) fireTimers(wokeFor time.Duration) {
	if r.timers.wakeArmed && r.timers.wakeAt == wokeFor {
		r.timers.wakeArmed = false
	}
	if r.stopped {
		return
	}
	r.timers.queue.Fire(r.env.Clock.Monotonic())
	r.armTimers()
	r.queueProcess()
}

// pendingRequest is one client request between its arrival and its answer.
type pendingRequest struct {
	r        *Reactor
	req      kmsg.Request
	respond  func(kmsg.Response)
	answered bool
	deadline clock.TimerID // 0 until armed
}

// answer is the respond function handlers get: the first answer goes to the
// client, any later one is dropped (the deadline answered first).
func (p *pendingRequest) answer(resp kmsg.Response) {
	if p.answered {
		p.r.stats.LateAnswers++
		return
	}
	p.answered = true
	if p.deadline != 0 {
		p.r.cancelTimer(p.deadline)
	}
	p.respond(resp)
}

// armDeadline bounds a request its handler left waiting.
func (p *pendingRequest) armDeadline() {
	r := p.r
	p.deadline = r.after(requestBudget(r, p.req), func() {
		if p.answered {
			return
		}
		r.stats.RequestsExpired++
		p.answer(expiredAnswer(r, p.req))
	})
}
