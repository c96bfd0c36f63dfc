package clock

import "time"

// Real reads the operating system's clocks. It is the Clock of a production
// node. Unlike the other clocks in this package it is safe for concurrent use:
// its only state is fixed when it is made.
type Real struct {
	// origin is the wall reading taken by NewReal. It carries Go's monotonic
	// clock reading, so time.Since(origin) is immune to wall-clock jumps.
	origin time.Time
}

// NewReal returns a Real whose Monotonic origin is now.
func NewReal() *Real {
	return &Real{origin: time.Now()}
}

// Now returns the operating system's wall-clock time.
func (r *Real) Now() time.Time { return time.Now() }

// Monotonic returns the time elapsed since NewReal, from the operating
// system's monotonic clock. It never decreases.
func (r *Real) Monotonic() time.Duration { return time.Since(r.origin) }
