package kafka

import (
	"net"
	"sync"
	"time"
)

// FailureDelay decides how long to hold back the answer to a failed
// authentication: Base after the first recent failure from an address,
// doubling with each further one, at most Max. An address's count is
// forgotten Forget after its last failure, and after a success. Kafka
// delays every failure by a flat connection.failed.authentication.delay.ms;
// a growing delay slows password guessing from one address much more,
// while a user who mistyped once waits Base.
//
// It is safe for concurrent use. Memory is bounded: past MaxAddresses
// addresses, the stale ones are forgotten, and if none is stale, all.
type FailureDelay struct {
	Base, Max, Forget time.Duration
	MaxAddresses      int

	mu     sync.Mutex
	byAddr map[string]failureCount
}

type failureCount struct {
	n    int
	last time.Time
}

// Defaults of NewFailureDelay.
const (
	DefaultAuthFailureDelay    = 100 * time.Millisecond
	DefaultAuthFailureDelayMax = 5 * time.Second
	defaultFailureForget       = 10 * time.Minute
	defaultFailureAddresses    = 10000
)

// NewFailureDelay returns a FailureDelay with the given base and maximum
// (zero: the defaults) and the default memory.
func NewFailureDelay(base, maxDelay time.Duration) *FailureDelay {
	if base <= 0 {
		base = DefaultAuthFailureDelay
	}
	if maxDelay <= 0 {
		maxDelay = DefaultAuthFailureDelayMax
	}
	return &FailureDelay{Base: base, Max: max(base, maxDelay), Forget: defaultFailureForget, MaxAddresses: defaultFailureAddresses}
}

// Failed records a failure from remote (host:port or host) at now and
// returns how long to delay its answer.
func (f *FailureDelay) Failed(remote string, now time.Time) time.Duration {
	host := hostOf(remote)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byAddr == nil {
		f.byAddr = map[string]failureCount{}
	}
	c, ok := f.byAddr[host]
	if !ok && len(f.byAddr) >= f.MaxAddresses {
		f.evict(now)
	}
	if ok && now.Sub(c.last) > f.Forget {
		c.n = 0
	}
	c.n++
	c.last = now
	f.byAddr[host] = c
	return f.delay(c.n)
}

// Succeeded forgets remote's failures.
func (f *FailureDelay) Succeeded(remote string) {
	f.mu.Lock()
	delete(f.byAddr, hostOf(remote))
	f.mu.Unlock()
}

// delay is Base * 2^(n-1), capped at Max.
func (f *FailureDelay) delay(n int) time.Duration {
	d := f.Base
	for i := 1; i < n && d < f.Max; i++ {
		d *= 2
	}
	return min(d, f.Max)
}

// evict forgets stale addresses, or every address if none is stale.
func (f *FailureDelay) evict(now time.Time) {
	for a, c := range f.byAddr { //floe:unordered every stale entry goes
		if now.Sub(c.last) > f.Forget {
			delete(f.byAddr, a)
		}
	}
	if len(f.byAddr) >= f.MaxAddresses {
		clear(f.byAddr)
	}
}

// hostOf strips the port: failures count per address, not per
// connection.
func hostOf(remote string) string {
	if h, _, err := net.SplitHostPort(remote); err == nil {
		return h
	}
	return remote
}
