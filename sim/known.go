package sim

import (
	"fmt"
	"strings"

	"github.com/floe-broker/floe/jepsen/check"
	"github.com/floe-broker/floe/jepsen/history"
	"github.com/floe-broker/floe/netx"
)

// Known bugs: anomalies the simulator found, reported and not fixed yet.
// A run that shows one is not failed for it, only if everything it found
// is explained by known bugs; it lists them under Result.Known, and
// TestSimKnownBugs checks that each one's seed still shows it, so a fix
// is noticed (then move the seed to regressionSeeds and delete the entry).
// Each is recognised by its mechanism, observed in the run, not by the
// shape of its symptom, so that an unknown bug with a similar symptom
// still fails the run.

// knownBug describes one.
type knownBug struct {
	name string
	// seed shows the bug (TestSimKnownBugs).
	seed int64
	what string
}

// None open in the default fault set. log-creation-not-crash-atomic (seed
// 5: segments beside meta files that never held a record were refused for
// ever) was fixed in logstore's open and is a regression seed now.
var knownBugs = []knownBug{}

// staleReads names the stale-read bug the simulator found first (seeds 32,
// 278 and 569 showed it: a paused or cut-off leader or group coordinator
// answered Fetch and OffsetFetch from its stale state). The lead fixed it
// with read leases (node/lease.go), so it is no longer in knownBugs and a
// stale read fails the run; the probe below still marks such reads in the
// history, which is what a reader of a failing run wants to see first.
const staleReads = "stale-read-from-deposed-leader"

// deposedNote marks, in a read's history completion, that the broker
// answered while another broker led the partition in a later epoch.
const deposedNote = "answered by a deposed leader"

// deposedProbe returns a probe for kafkaNet.callAt: at the instant broker
// id answers, has some broker led topic/partition in a later epoch than the
// one id leads in? Every probe (reads, and produces and commits, whose
// answers come from leaders) samples the leaders of the moment, up or
// paused, into the largest epoch seen; a broker answering from an older
// epoch is deposed, whether its successor is still up or not.
func (r *run) deposedProbe(id netx.NodeID, topic string, partition int32) func() bool {
	key := fmt.Sprintf("%s/%d", topic, partition)
	return func() bool {
		for _, other := range r.w.IDs() {
			if e, ok := r.leaderEpoch(other, topic, partition); ok && e > r.maxEpoch[key] {
				r.maxEpoch[key] = e
			}
		}
		mine, ok := r.leaderEpoch(id, topic, partition)
		return ok && mine < r.maxEpoch[key]
	}
}

// epochLeader is an instance that can say which partitions it leads: a
// *Broker, or a test's stand-in for one.
type epochLeader interface {
	LeaderEpochOf(topic string, partition int32) (int32, bool)
}

// leaderEpoch returns the epoch node id leads topic/partition in, if it is
// up and believes it leads it.
func (r *run) leaderEpoch(id netx.NodeID, topic string, partition int32) (int32, bool) {
	b, ok := r.w.Instance(id).(epochLeader)
	if !ok {
		return 0, false
	}
	return b.LeaderEpochOf(topic, partition)
}

// deposedHow is the note recording a probe's verdict.
func deposedHow(deposed bool) string {
	if deposed {
		return deposedNote
	}
	return ""
}

// classifyKnown splits a failed check: if every anomaly disappears once
// reads answered by deposed leaders are taken as failed (so they say
// nothing), the run shows the known stale-read bug and nothing else.
func classifyKnown(h history.History, rep check.Report) (known bool, stale int) {
	if rep.Valid == check.Valid {
		return false, 0
	}
	patched := make(history.History, len(h))
	for i, op := range h {
		if op.Type == history.OK && op.Note == deposedNote {
			op.Type = history.Fail
			stale++
		}
		patched[i] = op
	}
	if stale == 0 {
		return false, 0
	}
	return check.Check(patched, check.Options{}).Valid == check.Valid, stale
}

// findKnown returns the known bug named name, or nil once it is fixed.
func findKnown(name string) *knownBug {
	for i := range knownBugs {
		if knownBugs[i].name == name {
			return &knownBugs[i]
		}
	}
	return nil
}

// knownFatal reports whether a node's fatal error is the known
// log-creation bug.
func knownFatal(err error) bool {
	return findKnown("log-creation-not-crash-atomic") != nil &&
		strings.Contains(err.Error(), "has segments but no valid meta file")
}

func knownLine(name string, detail string) string {
	return fmt.Sprintf("KNOWN BUG %s: %s", name, detail)
}
