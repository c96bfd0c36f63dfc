package node

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// leaderWait is an admin answer (CreateTopics, CreatePartitions) waiting
// until the partitions it created have leaders, as Kafka's broker waits
// for them before it answers a request with a timeout.
//
// Invariant: every wait in Reactor.leaderWaits is unanswered; it leaves the
// list when done is called.
type leaderWait struct {
	topic    string
	id       [16]byte // the topic as created: a later topic of the same name is another
	from     int32    // the first partition waited for
	deadline time.Duration
	done     func(error)
}

// awaitLeaders calls done(nil) once every partition of topic from index
// from on has a leader in this broker's applied metadata: the leader
// reported itself once it served reads (sendReports), so a client this
// answer sends to it is served at once. A topic deleted meanwhile counts
// as done. done gets REQUEST_TIMED_OUT, with a message, when deadline (on
// the monotonic clock) passes first; it may run before awaitLeaders
// returns.
func (r *Reactor) awaitLeaders(topic string, from int32, deadline time.Duration, done func(error)) {
	w := &leaderWait{topic: topic, from: from, deadline: deadline, done: done}
	if t := r.ctl.state.Topics[topic]; t != nil {
		w.id = t.ID
	}
	if r.finishWait(w) {
		return
	}
	r.leaderWaits = append(r.leaderWaits, w)
}

// expireLeaderWaits answers the waits whose leaders are in place and those
// whose deadline passed (after every applied metadata change, and on every
// tick).
func (r *Reactor) expireLeaderWaits() {
	if len(r.leaderWaits) == 0 {
		return
	}
	waits := r.leaderWaits
	r.leaderWaits = nil
	var left []*leaderWait
	for _, w := range waits {
		if !r.finishWait(w) {
			left = append(left, w)
		}
	}
	// A done callback may have added waits of its own meanwhile.
	r.leaderWaits = append(left, r.leaderWaits...)
}

// finishWait answers w if it is over and reports whether it was.
func (r *Reactor) finishWait(w *leaderWait) bool {
	if r.leadersInPlace(w) {
		w.done(nil)
		return true
	}
	if r.env.Clock.Monotonic() >= w.deadline {
		w.done(withMessage(kerr.RequestTimedOut, fmt.Sprintf(
			"%s was created, but not every new partition had a leader before the request's timeout", w.topic)))
		return true
	}
	return false
}

func (r *Reactor) leadersInPlace(w *leaderWait) bool {
	t := r.ctl.state.Topics[w.topic]
	if t == nil || t.ID != w.id {
		return true
	}
	for _, p := range t.Partitions {
		if p.Index >= w.from && p.Leader <= 0 {
			return false
		}
	}
	return true
}

// requestDeadline turns a request's timeout_ms into a monotonic deadline.
func (r *Reactor) requestDeadline(timeoutMs int32) time.Duration {
	return r.env.Clock.Monotonic() + time.Duration(timeoutMs)*time.Millisecond
}
