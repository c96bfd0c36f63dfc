package bench

import "time"

// pacer schedules an open-loop sender: message i (counting from 0) is due at
// start + i/rate, whatever happened to the ones before it. The sender asks
// how many are due now, sends them stamped with their scheduled times, and
// sleeps until the next one is due. Pure arithmetic on the times it is
// given, so it is tested without a clock.
//
// Invariant: issued <= the number of messages due at the last call to due.
type pacer struct {
	start        time.Time
	intervalNs   float64 // nanoseconds between two scheduled sends: 1e9/rate
	issued       int64   // messages handed out by next so far
	burstMax     int64   // most messages due() returns at once
	scheduleDone bool
}

// newPacer paces ratePerSec messages per second from start. burstMax bounds
// one batch, so a sender that fell far behind still checks its stop
// condition often.
func newPacer(start time.Time, ratePerSec float64, burstMax int64) *pacer {
	return &pacer{start: start, intervalNs: 1e9 / ratePerSec, burstMax: max(burstMax, 1)}
}

// due returns how many messages are due at now and not yet issued (at most
// burstMax).
func (p *pacer) due(now time.Time) int64 {
	elapsedNs := float64(now.Sub(p.start))
	if elapsedNs < 0 {
		return 0
	}
	owed := int64(elapsedNs/p.intervalNs) + 1 - p.issued
	return min(max(owed, 0), p.burstMax)
}

// next issues the next message and returns its scheduled send time.
func (p *pacer) next() time.Time {
	t := p.start.Add(time.Duration(float64(p.issued) * p.intervalNs))
	p.issued++
	return t
}

// wait is how long to sleep at now before the next message is due (0 if it
// already is).
func (p *pacer) wait(now time.Time) time.Duration {
	at := p.start.Add(time.Duration(float64(p.issued) * p.intervalNs))
	return max(at.Sub(now), 0)
}
