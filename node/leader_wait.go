package node

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// metadataWait is an answer waiting for the applied metadata to change:
// an admin answer (CreateTopics, CreatePartitions) waiting until the
// partitions it created have leaders, as Kafka's broker waits for them
// before it answers a request with a timeout; a FindCoordinator waiting
// for the coordinator's partition to exist and have a leader.
//
// Invariant: every wait in Reactor.metadataWaits is unanswered; it leaves
// the list once try reports it done.
type metadataWait struct {
	deadline time.Duration // on the monotonic clock
	// try answers if it can and reports whether it did; expired says the
	// deadline passed, and then it must answer.
	try func(expired bool) bool
}

// awaitMetadata calls try now and after every applied metadata change and
// tick until it reports done; once deadline passes it calls it with
// expired set, which must answer. try may run before awaitMetadata returns.
func (r *Reactor) awaitMetadata(deadline time.Duration, try func(expired bool) bool) {
	w := &metadataWait{deadline: deadline, try: try}
	if r.finishWait(w) {
		return
	}
	r.metadataWaits = append(r.metadataWaits, w)
}

// awaitLeaders calls done(nil) once every partition of topic from index
// from on has a leader in this broker's applied metadata: the leader
// reported itself once it served reads (sendReports), so a client this
// answer sends to it is served at once. A topic deleted meanwhile counts
// as done. done gets REQUEST_TIMED_OUT, with a message, when deadline (on
// the monotonic clock) passes first; it may run before awaitLeaders
// returns.
func (r *Reactor) awaitLeaders(topic string, from int32, deadline time.Duration, done func(error)) {
	var id [16]byte // the topic as created: a later topic of the same name is another
	if t := r.ctl.state.Topics[topic]; t != nil {
		id = t.ID
	}
	r.awaitMetadata(deadline, func(expired bool) bool {
		if r.leadersInPlace(topic, id, from) {
			done(nil)
			return true
		}
		if expired {
			done(withMessage(kerr.RequestTimedOut, fmt.Sprintf(
				"%s was created, but not every new partition had a leader before the request's timeout", topic)))
			return true
		}
		return false
	})
}

// expireLeaderWaits tries the waits again (after every applied metadata
// change, and on every tick).
func (r *Reactor) expireLeaderWaits() {
	if len(r.metadataWaits) == 0 {
		return
	}
	waits := r.metadataWaits
	r.metadataWaits = nil
	var left []*metadataWait
	for _, w := range waits {
		if !r.finishWait(w) {
			left = append(left, w)
		}
	}
	// A try may have added waits of its own meanwhile.
	r.metadataWaits = append(left, r.metadataWaits...)
}

// finishWait tries w and reports whether it is over.
func (r *Reactor) finishWait(w *metadataWait) bool {
	if w.try(false) {
		return true
	}
	if r.env.Clock.Monotonic() >= w.deadline {
		return w.try(true)
	}
	return false
}

func (r *Reactor) leadersInPlace(topic string, id [16]byte, from int32) bool {
	t := r.ctl.state.Topics[topic]
	if t == nil || t.ID != id {
		return true
	}
	for _, p := range t.Partitions {
		if p.Index >= from && p.Leader <= 0 {
			return false
		}
	}
	return true
}

// requestDeadline turns a request's timeout_ms into a monotonic deadline.
func (r *Reactor) requestDeadline(timeoutMs int32) time.Duration {
	return r.env.Clock.Monotonic() + time.Duration(timeoutMs)*time.Millisecond
}
