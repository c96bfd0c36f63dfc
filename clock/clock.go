package clock

import "time"

// Clock is how core code reads time.
//
// Contract:
//   - Now is wall-clock time. It is what Kafka calls "time": record
//     timestamps with LogAppendTime, retention.ms, ListOffsets by timestamp.
//     It may jump forwards or backwards and may differ between nodes (the
//     simulator injects skew and jumps). Never measure an interval with it.
//   - Monotonic is the time elapsed since an origin fixed when the Clock was
//     made. It never decreases. Use it for timeouts, deadlines and latency.
//   - Both are cheap and safe to call from the reactor's goroutine. A Clock
//     need not be safe for concurrent use unless its type says so.
type Clock interface {
	Now() time.Time
	Monotonic() time.Duration
}

// Scheduler runs a function later, on the same single thread of control that
// owns the caller's state (the simulator's loop, or a reactor's loop).
//
// Contract:
//   - After(d, fn) arranges for fn to run once, no earlier than d from now on
//     the scheduler's clock. A negative or zero d means "as soon as possible,
//     after the current event finishes": fn is never called synchronously
//     from inside After.
//   - Functions due at the same instant run in the order they were scheduled.
//   - There is no cancellation: a caller that may want to cancel keeps a
//     flag, or uses Deadlines.
type Scheduler interface {
	After(d time.Duration, fn func())
}
