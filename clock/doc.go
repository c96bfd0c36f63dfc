// Package clock is the only source of time for Floe's deterministic core.
//
// It owns three things:
//
//   - Clock, the contract every core package reads time through: a wall-clock
//     reading (record timestamps, retention.ms) and a monotonic reading
//     (timeouts, latency). Real reads the operating system. Sim is the
//     simulator's clock; each simulated node reads it through a SkewClock,
//     whose wall clock the simulator can skew and jump while its monotonic
//     clock stays true.
//   - Scheduler, the contract for "run this later on my single thread". The
//     simulator's event heap (Sim) implements it; so does the production
//     reactor loop. Core code never starts a timer goroutine.
//   - Deadlines, a deterministic deadline queue a reactor keeps for its own
//     timers (Fetch max wait, session timeouts). The runtime asks it for the
//     next deadline and wakes the reactor then; the queue itself is pure data.
//
// Determinism: Sim runs events in (time, scheduling order) and Deadlines fires
// timers in (deadline, id) order, so a run depends only on the order in which
// work was scheduled, never on a map, a goroutine or the host's clock.
//
// What it must not do: clock never imports another Floe package, and nothing
// outside real.go calls time.Now, time.Sleep or creates a time.Timer.
package clock
