package clock

import "time"

// SkewClock is one simulated node's view of a Sim's time.
//
// Its monotonic reading is the Sim's, so timeouts and deadlines behave as on
// a real machine whatever happens to the wall clock. Its wall clock is the
// Sim's plus an offset the simulator controls, to inject the clock faults a
// real cluster sees: skew between nodes (SetOffset) and NTP steps forwards or
// backwards (Jump). Record timestamps and retention read the skewed wall
// clock; nothing measured with Monotonic is affected.
//
// SkewClock implements Clock and Scheduler. Like Sim it is not safe for
// concurrent use.
type SkewClock struct {
	sim *Sim
	// offset is added to the Sim's wall time. It may be negative.
	offset time.Duration
}

// Now returns the Sim's wall time plus the offset.
func (c *SkewClock) Now() time.Time { return c.sim.Now().Add(c.offset) }

// Monotonic returns the Sim's monotonic time; skew never reaches it.
func (c *SkewClock) Monotonic() time.Duration { return c.sim.Monotonic() }

// After schedules fn on the Sim's event heap; see Sim.After.
func (c *SkewClock) After(d time.Duration, fn func()) { c.sim.After(d, fn) }

// SetOffset sets the wall-clock offset from the Sim's wall time.
func (c *SkewClock) SetOffset(d time.Duration) { c.offset = d }

// Offset returns the current wall-clock offset.
func (c *SkewClock) Offset() time.Duration { return c.offset }

// Jump moves the wall clock by d (backwards when d < 0) from where it is,
// as a clock step by NTP or an operator would.
func (c *SkewClock) Jump(d time.Duration) { c.offset += d }
