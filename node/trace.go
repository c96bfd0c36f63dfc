package node

import "time"

// Trace collects the stage timings of one request for the runtime's
// tracer (node/runtime/tracing.go), which turns them into spans. The core
// only writes times read from its clock into it; it never creates spans,
// exports anything or decides on sampling.
//
// Contract: Client.Trace is nil unless the runtime traces the request, and
// every site that records a stage checks for nil first, so an untraced
// request costs one pointer test per site and no clock read. The reactor
// writes the Trace only on its own thread; the runtime reads it on that
// thread too, when the request is answered (it copies Stages then). A
// stage still open at that moment (a leader's own fsync after a quorum of
// followers already committed) has a zero End and is reported as such.
type Trace struct {
	Stages []TraceStage
}

// TraceStage is one timed stage of a request.
type TraceStage struct {
	Name      string // one of the Stage* names
	Topic     string // "" when the stage is not about one partition
	Partition int32
	Start     time.Time
	End       time.Time // zero while the stage runs
}

// Stage names.
const (
	StageValidate = "validate"    // a produced batch's checks
	StageAppend   = "append"      // assigning offsets and proposing to Raft
	StageFsync    = "fsync"       // the group-commit fsync round that made the leader's copy durable
	StageQuorum   = "quorum.wait" // from the append to the commit on a quorum
	StagePark     = "fetch.park"  // a fetch waiting for data (MinBytes) or its MaxWait
)

// begin opens a stage and returns its index for end.
func (t *Trace) begin(name, topic string, partition int32, now time.Time) int {
	t.Stages = append(t.Stages, TraceStage{Name: name, Topic: topic, Partition: partition, Start: now})
	return len(t.Stages) - 1
}

// end closes stage i.
func (t *Trace) end(i int, now time.Time) { t.Stages[i].End = now }

// traceSync is a traced produce's fsync stage waiting for its round.
type traceSync struct {
	t     *Trace
	stage int
}

// traceSyncs tracks the fsync stages of traced produces: those appended
// since the last round started wait for the next round (the first to start
// after their append includes their write, process.go's order: take, then
// startSync); each round in flight holds its own and ends them
// (ready.go's syncRound).
type traceSyncs struct {
	waiting []traceSync
}

// roundStarted hands the waiting stages to the round that starts now.
func (ts *traceSyncs) roundStarted(now time.Time) []traceSync {
	for _, s := range ts.waiting {
		s.t.Stages[s.stage].Start = now
	}
	round := ts.waiting
	ts.waiting = nil
	return round
}

// roundDone ends the stages of a round.
func roundDone(round []traceSync, now time.Time) {
	for _, s := range round {
		s.t.end(s.stage, now)
	}
}
