package sim

// The share workload's redelivery backoff (Floe's retry policy, issue 18):
// in some share seeds (shareBackoffSeedShare, drawn from the seed alone so
// the seed's other choices stay as they were) the group gets a backoff
// through its floe.share.retry.backoff.* configs, set with the
// dead-letter topic before the consumers start. The checker:
//
//   - backoff-early: a record whose release (at delivery count n) was
//     answered without error is handed out again (count above n) sooner
//     after that release was sent than the shortest delay the policy
//     allows for n: min(max, initial*multiplier^(n-1)) * (1-jitter),
//     divided by the fastest a node's monotonic clock may run against
//     simulated time (clock drift, faults_more.go). The release is
//     applied no earlier than it was sent and the redelivery no later
//     than it was received, so a correct broker always passes, across
//     coordinator failovers too: the share-partition state carries what
//     is left of the delay (node/share's Restore), and a new coordinator
//     starts it again from its load.
//
// Only releases are checked: a record whose lock lapsed starts backing
// off without a write of its own, so a failover before the next write
// may legitimately make it due at once (docs/patterns.md).
//
// So that a failover often falls inside a backoff, the workload itself
// moves the coordinator now and then in backoff seeds: after a release is
// answered, with probability shareMoveP (at most once per shareMoveGap,
// before the heal), the coordinator hands off every leadership it holds,
// as the nemesis's transfer fault does, and the broker that takes over
// loads the share state from the log.

import (
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"time"

	"github.com/floe-broker/floe/netx"
)

const (
	shareBackoffSeedShare = 0.6
	shareMoveP            = 0.3
	shareMoveGap          = time.Second
)

// shareBackoff is a seed's retry policy (zero Initial: none).
type shareBackoff struct {
	Initial, Max time.Duration
	Multiplier   float64
	Jitter       float64
}

// chooseShareBackoff draws a seed's backoff from its own generator. The
// delays (a few hundred ms to 2 s) are longer than a coordinator failover
// takes in the simulator and short enough for the liveness phase.
func chooseShareBackoff(seed int64) shareBackoff {
	rng := rand.New(rand.NewSource(seed ^ 0xbac0ff))
	if rng.Float64() >= shareBackoffSeedShare {
		return shareBackoff{}
	}
	b := shareBackoff{Initial: time.Duration(400+rng.Intn(800)) * time.Millisecond, Multiplier: 1}
	if rng.Intn(2) == 0 {
		b.Multiplier = 2
	}
	b.Max = 2 * time.Second
	if rng.Intn(2) == 0 {
		b.Jitter = 0.25 * rng.Float64()
	}
	return b
}

// configs are the group configs that set b.
func (b shareBackoff) configs() [][2]string {
	if b.Initial <= 0 {
		return nil
	}
	return [][2]string{
		{"floe.share.retry.backoff.ms", strconv.FormatInt(b.Initial.Milliseconds(), 10)},
		{"floe.share.retry.backoff.max.ms", strconv.FormatInt(b.Max.Milliseconds(), 10)},
		{"floe.share.retry.backoff.multiplier", strconv.FormatFloat(b.Multiplier, 'g', -1, 64)},
		{"floe.share.retry.backoff.jitter", strconv.FormatFloat(b.Jitter, 'g', -1, 64)},
	}
}

// least is the shortest delay a record released after delivery n may get,
// in simulated time, with clock rates up to rate.
func (b shareBackoff) least(n int16, rate float64) time.Duration {
	if b.Initial <= 0 || n < 1 {
		return 0
	}
	d := float64(b.Initial)
	for i := int16(1); i < n && d < float64(b.Max); i++ {
		d *= b.Multiplier
	}
	d = math.Min(d, float64(b.Max)) * (1 - b.Jitter) / rate
	return time.Duration(d) - time.Millisecond // float rounding
}

// fastestClock is the highest rate a node's monotonic clock may run at
// against simulated time in this run.
func (r *run) fastestClock() float64 {
	m := r.o.Faults.More
	switch {
	case m.DriftUnsafe:
		return 2.5
	case m.Drift > 0 && m.DriftRatio > 1:
		return math.Sqrt(m.DriftRatio)
	}
	return 1
}

// noteRelease keeps a release answered without error, sent at sentAt.
func (w *shareWork) noteRelease(sr *shareRec, count int16, sentAt time.Duration) {
	if count > sr.releasedCount || (count == sr.releasedCount && sentAt > sr.releasedAt) {
		sr.releasedCount, sr.releasedAt = count, sentAt
	}
	w.releasedNow = true
	w.r.cover(covShareReleased)
}

// covShareReleased counts releases answered without error (not required:
// the focused test of share_lag_test.go needs one).
const covShareReleased = "share release answered"

// checkBackoff checks a redelivery with count, received now, against the
// last release of the record clients heard of.
func (w *shareWork) checkBackoff(sr *shareRec, where string, count int16, now time.Duration) {
	if w.backoff.Initial <= 0 || sr.releasedCount == 0 || count <= sr.releasedCount || now <= sr.releasedAt {
		return
	}
	w.stats.backoffChecked++
	least := w.backoff.least(sr.releasedCount, w.r.fastestClock())
	if got := now - sr.releasedAt; got < least {
		w.bad("backoff-early", fmt.Sprintf("%s released at delivery %d (sent at %v) handed out again with count %d %v later, under the backoff's least %v (%+v)",
			where, sr.releasedCount, sr.releasedAt, count, got, least, w.backoff))
		return
	}
	w.r.cover("share redelivery after its backoff")
}

// maybeMoveCoordinator, after a release to coordinator co was answered,
// may make co hand off its leaderships (see above).
func (w *shareWork) maybeMoveCoordinator(co netx.NodeID) {
	r := w.r
	if w.backoff.Initial <= 0 || !w.releasedNow || r.stopping || co == 0 || r.now()-w.movedAt < shareMoveGap {
		w.releasedNow = false
		return
	}
	w.releasedNow = false
	if w.move.Float64() >= shareMoveP {
		return
	}
	w.movedAt = r.now()
	w.stats.moves++
	r.w.Tracef("share: coordinator n%d hands off its leaderships after a release", co)
	r.w.Call(co, 0, "admin transfer-leaderships", func(inst Instance) {
		if b, ok := inst.(*Broker); ok {
			b.R.TransferLeaderships()
		}
	}, nil)
}
