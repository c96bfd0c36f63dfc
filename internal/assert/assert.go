package assert

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// on says whether assertions are checked. It is written before the core
// runs (package init, or Enable before the simulator starts) and read on
// every guarded check; atomic so that campaigns running seeds in parallel
// may call Enable from several goroutines.
var on atomic.Bool

func init() { on.Store(testing.Testing()) }

// Enabled reports whether assertions are on.
func Enabled() bool { return on.Load() }

// Enable turns assertions on for the rest of the process (the simulator).
func Enable() { on.Store(true) }

// Violation is the panic value of a failed assertion.
type Violation struct{ Msg string }

func (v Violation) Error() string { return "assertion failed: " + v.Msg }

// Failf reports a violated invariant: with assertions on it panics with a
// Violation; otherwise it returns and the caller goes on with its safe
// fallback.
func Failf(format string, args ...any) {
	if on.Load() {
		panic(Violation{Msg: fmt.Sprintf(format, args...)})
	}
}

// Set switches assertions on or off and returns the old setting. For tests
// that show what production does with assertions off.
func Set(v bool) (was bool) { return on.Swap(v) }

// Catch runs f and returns the Violation it panicked with, or nil if it
// returned. Any other panic goes on. For tests that prove an assertion
// fires.
func Catch(f func()) (v *Violation) {
	defer func() {
		if p := recover(); p != nil {
			got, ok := p.(Violation)
			if !ok {
				panic(p)
			}
			v = &got
		}
	}()
	f()
	return nil
}
