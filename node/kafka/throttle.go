package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Throttling (KIP-219). A handler that throttles a client sets the
// response's throttle time (kmsg.ThrottleResponse). When the response's
// version applies the throttle after the response (Produce v6+, Fetch
// v8+, ...), the server sends it at once and reads nothing more from the
// connection until the throttle time has passed since the handler
// responded: the broker's half of the bargain, so a client that ignores
// the throttle is slowed all the same. Requests already read are served
// as usual. For older versions Kafka delays the response itself; that is
// the handler's business (the server never holds a response back).

// Unwrapper is a response wrapping another (the runtime's tracer wraps
// responses to time their write); the server looks through it for the
// throttle time.
type Unwrapper interface {
	Unwrap() kmsg.Response
}

// ThrottleAfter returns the throttle time a response carries when it is
// applied after the response (KIP-219), or 0.
func ThrottleAfter(resp kmsg.Response) time.Duration {
	for i := 0; resp != nil && i < 8; i++ {
		if tr, ok := resp.(kmsg.ThrottleResponse); ok {
			ms, after := tr.Throttle()
			if !after || ms <= 0 {
				return 0
			}
			return time.Duration(ms) * time.Millisecond
		}
		u, ok := resp.(Unwrapper)
		if !ok {
			return 0
		}
		resp = u.Unwrap()
	}
	return 0
}

// muteFor mutes the connection for resp's throttle time, from now,
// unless it is muted longer already.
func (c *conn) muteFor(resp kmsg.Response) {
	d := ThrottleAfter(resp)
	if d <= 0 {
		return
	}
	until := time.Now().Add(d).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// waitMuted waits while the connection is muted. It returns false when
// the server stops or the connection is aborted meanwhile.
func (c *conn) waitMuted() bool {
	for {
		d := time.Until(time.Unix(0, c.mutedUntil.Load()))
		if d <= 0 {
			return true
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-c.srv.stopCh:
			t.Stop()
			return false
		case <-c.dead:
			t.Stop()
			return false
		}
	}
}
