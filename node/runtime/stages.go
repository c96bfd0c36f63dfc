package runtime

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/node"
)

// Produce stage histograms (issue 21): where an acks=all produce's time
// goes, per request, from inside the broker. The core records the
// reactor's stages in a node.Trace (validate, append, the fsync round,
// the commit wait: node/trace.go) for every request that carries one;
// the runtime adds the times only it sees (the socket read, the hop onto
// the reactor, the response write) and, when the response is flushed,
// breaks the request down with produceBreakdown and observes one
// histogram per stage. Produce requests are sampled (Options.
// ProduceStageSample): one in N carries a Trace, with or without
// OpenTelemetry tracing.

// Stage labels of floe_produce_stage_seconds, in the order a produce
// goes through them.
const (
	stageSocketRead  = "socket_read"  // size prefix read to request decoded (rest of the frame + decode)
	stageReactorWait = "reactor_wait" // decoded to the reactor taking it (the loop's queue)
	stageValidate    = "validate"     // batch checks, summed over the request's partitions
	stageAppend      = "append"       // offsets assigned and proposed to Raft, summed
	stageFsyncWait   = "fsync_wait"   // appended to the start of the fsync round that includes it
	stageFsync       = "fsync"        // that round
	stageReplication = "replication"  // after the leader's copy is durable, until a quorum has it and it is applied
	stageReactorRest = "reactor_rest" // the rest of the reactor's time: other partitions, answering
	stageResponse    = "response"     // answered to the response's bytes flushed to the socket
	stageTotal       = "total"        // size prefix read to the response flushed
)

// produceStages lists the stage labels in order.
var produceStages = []string{stageSocketRead, stageReactorWait, stageValidate, stageAppend, stageFsyncWait,
	stageFsync, stageReplication, stageReactorRest, stageResponse, stageTotal}

// ProduceStageSampleDefault is Options.ProduceStageSample's default: every
// produce request is broken down (a handful of clock reads and small
// allocations per request, next to a request's kilobytes of records).
const ProduceStageSampleDefault = 1

// stageTimes is one produce request's times as the runtime saw them.
type stageTimes struct {
	readAt   time.Time // its size prefix was read (zero: unknown)
	posted   time.Time // decoded and posted to the reactor
	started  time.Time // the reactor took it
	answered time.Time // the reactor answered
	written  time.Time // the response was flushed
}

// stageDurations is one request's breakdown, indexed like produceStages;
// present[i] is false for a stage the request did not go through (an
// acks=1 produce has no fsync, a request without a read time no socket
// read).
type stageDurations struct {
	d       [10]time.Duration
	present [10]bool
}

func (s *stageDurations) set(i int, d time.Duration) {
	s.d[i], s.present[i] = max(d, 0), true
}

// Indexes into stageDurations, matching produceStages.
const (
	iSocketRead = iota
	iReactorWait
	iValidate
	iAppend
	iFsyncWait
	iFsync
	iReplication
	iReactorRest
	iResponse
	iTotal
)

// produceBreakdown splits a produce request's time into stages. The
// commit stages follow the critical partition: the one whose commit wait
// ended last (it decided when the answer could go). Its commit wait (from
// its append to its entry applied) is split at the start and end of its
// fsync round into fsync_wait, fsync and replication, each clamped to the
// wait so they add up to it; a round that had not ended when the entry
// was applied (a quorum of followers was faster than the leader's own
// disk) was not on the critical path and counts as nothing. Pure: the
// unit tests feed it hand-made traces.
func produceBreakdown(t stageTimes, stages []node.TraceStage) stageDurations {
	var out stageDurations
	if !t.readAt.IsZero() && !t.posted.IsZero() {
		out.set(iSocketRead, t.posted.Sub(t.readAt))
	}
	if !t.started.IsZero() {
		out.set(iReactorWait, t.started.Sub(t.posted))
	}
	var validate, appendD time.Duration
	var sawValidate, sawAppend bool
	crit := -1
	for i, st := range stages {
		if st.Start.IsZero() || st.End.IsZero() {
			continue
		}
		switch st.Name {
		case node.StageValidate:
			validate += st.End.Sub(st.Start)
			sawValidate = true
		case node.StageAppend:
			appendD += st.End.Sub(st.Start)
			sawAppend = true
		case node.StageQuorum:
			if crit < 0 || st.End.After(stages[crit].End) {
				crit = i
			}
		}
	}
	if sawValidate {
		out.set(iValidate, validate)
	}
	if sawAppend {
		out.set(iAppend, appendD)
	}
	var commit time.Duration
	if crit >= 0 {
		q := stages[crit]
		fs, fe := q.Start, q.Start // no round on the path
		for _, st := range stages {
			if st.Name == node.StageFsync && st.Topic == q.Topic && st.Partition == q.Partition &&
				!st.Start.IsZero() && !st.End.IsZero() && !st.End.After(q.End) {
				fs, fe = clampTime(st.Start, q.Start, q.End), clampTime(st.End, q.Start, q.End)
			}
		}
		out.set(iFsyncWait, fs.Sub(q.Start))
		out.set(iFsync, fe.Sub(fs))
		out.set(iReplication, q.End.Sub(fe))
		commit = q.End.Sub(q.Start)
	}
	if !t.started.IsZero() && !t.answered.IsZero() {
		out.set(iReactorRest, t.answered.Sub(t.started)-validate-appendD-commit)
	}
	if !t.answered.IsZero() && !t.written.IsZero() {
		out.set(iResponse, t.written.Sub(t.answered))
	}
	if from := t.readAt; !t.written.IsZero() {
		if from.IsZero() {
			from = t.posted
		}
		out.set(iTotal, t.written.Sub(from))
	}
	return out
}

func clampTime(t, lo, hi time.Time) time.Time {
	if t.Before(lo) {
		return lo
	}
	if t.After(hi) {
		return hi
	}
	return t
}

// stageHistograms is floe_produce_stage_seconds, one child per stage, and
// the sampling counter.
type stageHistograms struct {
	vec    *prometheus.HistogramVec
	stages [10]prometheus.Observer
	every  uint64 // sample one produce request in every; 0: off
	n      atomic.Uint64
}

// stageBuckets spans 10 µs to about 2.6 s in steps of √2, fine enough to
// read a p99 to within ±20%.
var stageBuckets = prometheus.ExponentialBuckets(0.00001, 1.4142135623730951, 37)

func newStageHistograms(reg prometheus.Registerer, every int) *stageHistograms {
	h := &stageHistograms{every: uint64(max(every, 0))}
	h.vec = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "floe_produce_stage_seconds",
		Help:    "Where a produce request's time goes, by stage (sampled requests; acks=all requests have the fsync and replication stages). See docs/benchmarks.md.",
		Buckets: stageBuckets,
	}, []string{"stage"})
	for i, name := range produceStages {
		h.stages[i] = h.vec.WithLabelValues(name)
	}
	reg.MustRegister(h.vec)
	return h
}

// sample reports whether this produce request is broken down.
func (h *stageHistograms) sample() bool {
	if h == nil || h.every == 0 {
		return false
	}
	return h.n.Add(1)%h.every == 0
}

// observe records one request's breakdown.
func (h *stageHistograms) observe(d stageDurations) {
	for i, ok := range d.present {
		if ok {
			h.stages[i].Observe(d.d[i].Seconds())
		}
	}
}
