package node

import (
	"testing"
	"time"

	"github.com/floe-broker/floe/clock"
)

// fakeRPCHost is an rpcHost on a bare deadline queue, with a counted nonce
// draw.
type fakeRPCHost struct {
	q      *clock.Deadlines
	now    time.Duration
	nonces []uint64 // what rpcNonce returns, in turn
	draws  int
}

func newFakeRPCHost(nonces ...uint64) *fakeRPCHost {
	return &fakeRPCHost{q: clock.NewDeadlines(), nonces: nonces}
}

func (h *fakeRPCHost) rpcNonce() uint64 {
	n := h.nonces[h.draws]
	h.draws++
	return n
}

func (h *fakeRPCHost) after(d time.Duration, fn func()) clock.TimerID {
	return h.q.Add(h.now+d, fn)
}

func (h *fakeRPCHost) cancelTimer(id clock.TimerID) { h.q.Cancel(id) }

// advance moves the fake clock on by d and fires the timers due.
func (h *fakeRPCHost) advance(d time.Duration) {
	h.now += d
	h.q.Fire(h.now)
}

func TestRPCCallsRegisterTake(t *testing.T) {
	h := newFakeRPCHost(7, 9)
	var c rpcCalls[string]
	if h.draws != 0 {
		t.Fatal("the nonce was drawn before the first register")
	}
	var expired []string
	expire := func(p string) { expired = append(expired, p) }
	n1, id1 := c.register(h, "a", time.Second, expire)
	n2, id2 := c.register(h, "b", time.Second, expire)
	if h.draws != 1 {
		t.Fatalf("nonce drawn %d times, want once at the first register", h.draws)
	}
	if n1 != 7 || n2 != 7 || id1 != 1 || id2 != 2 {
		t.Fatalf("got (%d,%d) (%d,%d), want (7,1) (7,2)", n1, id1, n2, id2)
	}
	if p, ok := c.take(h, n2, id2); !ok || p != "b" {
		t.Fatalf("take(b) = %q, %v", p, ok)
	}
	if p, ok := c.take(h, n2, id2); ok {
		t.Fatalf("a duplicate answer took %q", p)
	}
	if h.q.Len() != 1 {
		t.Fatalf("%d timers pending, want 1: the taken call's timeout cancelled", h.q.Len())
	}
	h.advance(time.Second)
	if len(expired) != 1 || expired[0] != "a" {
		t.Fatalf("expired %q, want [a]", expired)
	}
	if p, ok := c.take(h, n1, id1); ok {
		t.Fatalf("an answer after the timeout took %q", p)
	}
	if len(c.pending) != 0 || h.q.Len() != 0 {
		t.Fatalf("%d calls, %d timers left", len(c.pending), h.q.Len())
	}
	// Later calls keep the nonce and count on.
	if n, id := c.register(h, "c", time.Second, expire); n != 7 || id != 3 {
		t.Fatalf("third register (%d,%d), want (7,3)", n, id)
	}
	if h.draws != 1 {
		t.Fatalf("nonce drawn %d times, want once", h.draws)
	}
}

func TestRPCCallsExpireOnce(t *testing.T) {
	h := newFakeRPCHost(3)
	var c rpcCalls[int]
	var expired []int
	expire := func(p int) { expired = append(expired, p) }
	_, _ = c.register(h, 1, 2*time.Second, expire)
	n, id := c.register(h, 2, time.Second, expire)
	h.advance(time.Second)
	if len(expired) != 1 || expired[0] != 2 {
		t.Fatalf("expired %v after 1s, want [2]", expired)
	}
	if _, ok := c.take(h, n, id); ok {
		t.Fatal("an expired call was taken")
	}
	h.advance(time.Second)
	h.advance(time.Hour)
	if len(expired) != 2 || expired[1] != 1 {
		t.Fatalf("expired %v, want [2 1]", expired)
	}
}

func TestRPCCallsStaleNonce(t *testing.T) {
	h := newFakeRPCHost(5)
	var c rpcCalls[string]
	// Before any call no answer matches, whatever its nonce.
	for _, n := range []uint64{0, 5, 1} {
		if _, ok := c.take(h, n, 1); ok {
			t.Fatalf("take(%d, 1) on an empty registry", n)
		}
	}
	n, id := c.register(h, "x", time.Second, func(string) { t.Fatal("expired") })
	// An earlier incarnation's answer with the same id, and a zero nonce.
	for _, stale := range []uint64{n + 2, 0} {
		if p, ok := c.take(h, stale, id); ok {
			t.Fatalf("stale nonce %d took %q", stale, p)
		}
	}
	if p, ok := c.take(h, n, id+1); ok {
		t.Fatalf("an unknown id took %q", p)
	}
	if p, ok := c.take(h, n, id); !ok || p != "x" {
		t.Fatalf("take = %q, %v after stale answers", p, ok)
	}
	h.advance(time.Hour) // the cancelled timeout does not expire it
}
