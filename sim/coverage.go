package sim

import (
	"fmt"
	"strings"

	"github.com/floe-broker/floe/node"
)

// Coverage ("sometimes") assertions, issue 15. A seed that passes says
// little if it never reached the rare paths where bugs live, so each run
// counts how often it reached each named path, and a campaign adds the
// counts up: `make sim` prints the table, and the default `go test ./sim`
// fails when a path in coveragePaths was reached 0 times across its seeds.
//
// The counts come from outside the product's decisions: the white-box
// views the invariants read (node.Reactor.Inspect: terms, log bounds,
// fences), the brokers' own counters (node.Stats), and the clients'
// answers. Counting changes nothing in any broker and schedules no event,
// and the counters live in the run (no global state), so a seed replays
// the same with or without them.

// coveragePaths are the paths the default seeds must reach, in table
// order. Paths named in docs/testing.md as not reached yet (Raft
// snapshots, retention deletion, compaction passes, a replica found
// damaged by a read and repaired, ...) are not listed: no default seed
// reaches them until the workload does. They are still counted when
// reached, and printed as "not required".
var coveragePaths = []string{
	covNewLeader,
	covTruncated,
	covFencedVote,
	covLeaseRefused,
	covShareRemoteRead,
	covRestartCaughtUp,
	"idempotent resend answered as duplicate",
	"group member synced a generation",
	"generation fence rejected a zombie commit",
	"group member left",
	"coordinator killed at a commit acknowledgement",
	"acknowledged commit read back",
	// More of the product under test (issue 15).
	"zombie producer epoch fenced",
	"leader transfer bounced back",
	"retention deleted a segment",
	"Raft snapshot installed",
	covSnapSent,
	covExpiredAccepted,
	covKeptRefused,
	covCtlCompacted,
	covCtlSnapInstalled,
	"topic re-created",
	"partitions added to a topic",
	covBalancerMove, // issue 23 (balance.go)
	// Transactions on a compacted topic (txncompact.go).
	"compaction removed an aborted transaction's records",
	"compaction removed a transaction marker",
	"client quota altered", // issue 20 (quotas.go)
	covVoterAdded,          // issue 23 (voters.go)
	covVoterRemoved,
	// Pipelined clients (pipeconn.go, pipeproduce.go).
	covPipeFull,
	covPipeHeldBack,
	covPipeResent,
	// Compressed batches produced and read back, one row per codec (batch.go).
	covCodecRead[1],
	covCodecRead[2],
	covCodecRead[3],
	covCodecRead[4],
}

// covCodecRead[c] counts records of a batch compressed with codec c
// (batch.go) that a sim client produced and read back.
var covCodecRead = [codecsN]string{"", "gzip batch produced and read back", "snappy batch produced and read back",
	"lz4 batch produced and read back", "zstd batch produced and read back"}

const (
	covNewLeader    = "leader elected in a new term"
	covTruncated    = "uncommitted suffix truncated"
	covFencedVote   = "vote fence in force"
	covRepaired     = "damaged replica repaired from peers"
	covCorruptRead  = "replica marked damaged"
	covLeaseRefused = "read refused: lease expired"
	// covShareRemoteRead: a share coordinator read a partition it holds
	// no replica of from its leader (node/share_read.go).
	covShareRemoteRead = "share coordinator read a partition from its leader (no replica)"
	covRestartCaughtUp = "restarted member recovered its durable commit"
	covSnapshot        = "log compacted behind a snapshot"
	// A leader sent a Raft snapshot to a member behind its log's start
	// (node.Stats.RaftSnapshotsSent, any group: the controller's or a
	// partition's; counted on the brokers' last incarnations).
	covSnapSent        = "Raft snapshot sent to a lagging member"
	covExpiredAccepted = "expired producer id accepted at any sequence"
	covKeptRefused     = "unexpired producer id refused a sequence gap"
	// The controller's own (ControllerSnapshotEntries, faults_more.go).
	covCtlCompacted     = "controller log compacted behind a snapshot"
	covCtlSnapInstalled = "controller snapshot installed on a lagging member"
	// A restarted member lost entries it had held and known committed,
	// and came back fenced over them (invariants.go, heldAfterRestart).
	covFencedOverLoss = "restarted member fenced over committed entries it lost"
)

// Recovery coverage (issue 13): a log's recovery at open found a damaged
// entry header by its header check (logstore), read from the line the
// broker logs (node/replicas.go, "... recovery cut N entries: <reason>").
// Counted, not required: the corruption fault's flips land in an entry
// header in few seeds. The zero-filled tails the check's companion rule
// tells apart have no row: SimFS never leaves one (it models no extents).
const covHeaderCheck = "recovery: damaged entry header caught by its check"

// A damaged leader could not send a follower an entry it lacked and
// stepped down to be repaired (node/repair.go handOverDamaged, seed
// 990482), read from the line the broker logs. Counted, not required.
const covDamagedStepDown = "damaged leader stepped down (no transfer could finish)"

// coverRecovery counts the recovery paths a broker's log line shows.
func (r *run) coverRecovery(line string) {
	if strings.Contains(line, "header check mismatch") {
		r.cover(covHeaderCheck)
	}
	if strings.Contains(line, "stepping down to be repaired") {
		r.cover(covDamagedStepDown)
	}
}

// cover counts one reach of the named path.
func (r *run) cover(name string) {
	if r.coverage == nil {
		r.coverage = map[string]int{}
	}
	r.coverage[name]++
}

// coverView counts what one member's view shows against the last one
// (called by the invariants on every observation).
func (r *run) coverView(prev memberSeen, hadPrev bool, v node.ReplicaView, inc uint64) {
	r.coverSteady(&v)
	if v.Damaged && (!hadPrev || !prev.damaged) {
		r.cover(covCorruptRead)
	}
	if hadPrev && prev.inc == inc && prev.damaged && !v.Damaged {
		r.cover(covRepaired)
	}
	if !hadPrev {
		return
	}
	if prev.inc == inc && v.LastIndex < prev.last {
		r.cover(covTruncated)
	}
	if prev.inc != inc && v.Commit >= prev.durCo && prev.durCo > 0 {
		r.cover(covRestartCaughtUp)
	}
	if v.HighWatermark == -1 && prev.inc == inc && v.FirstIndex > prev.first { // the controller
		if v.FirstIndex > prev.last+1 {
			r.cover(covCtlSnapInstalled)
		} else {
			r.cover(covCtlCompacted)
		}
	}
}

// coverSteady counts what one view shows on its own, without the last
// one: a check that skips an unchanged view counts these again
// (invariants.look). Counted in fields, added to the table at the end
// (coverStats): this runs for every view at every simulated instant.
func (r *run) coverSteady(v *node.ReplicaView) {
	if v.Fenced {
		r.fencedViews++
	}
	if v.FirstIndex > 1 {
		r.snapshotViews++
	}
}

// coverStats adds the brokers' own counters at the end of a run.
func (r *run) coverStats() {
	for _, id := range r.w.IDs() {
		b, ok := r.w.Instance(id).(*Broker)
		if !ok || b == nil || b.R == nil {
			continue
		}
		s, _ := b.R.Stats()
		r.coverN(covLeaseRefused, int(s.LeaseRefusals))
		r.coverN(covShareRemoteRead, int(s.ShareRemoteReads))
		r.coverN(covSnapSent, int(s.RaftSnapshotsSent))
	}
	r.coverN(covFencedVote, r.fencedViews)
	r.coverN(covSnapshot, r.snapshotViews)
	r.coverN(covNewLeader, len(r.inv.leaders)) // distinct (group, term)
}

func (r *run) coverN(name string, n int) {
	if n > 0 {
		r.cover(name)
		r.coverage[name] += n - 1
	}
}

// Coverage is a campaign's coverage: per path, the reaches and the seeds
// that reached it.
type Coverage struct {
	Seeds  int
	Counts map[string]int
	SeedsN map[string]int
}

// Add adds one run's counts.
func (c *Coverage) Add(res *Result) {
	if c.Counts == nil {
		c.Counts, c.SeedsN = map[string]int{}, map[string]int{}
	}
	c.Seeds++
	for k, n := range res.Coverage {
		c.Counts[k] += n
		if n > 0 {
			c.SeedsN[k]++
		}
	}
}

// Missing lists the paths of coveragePaths reached 0 times.
func (c *Coverage) Missing() []string {
	var out []string
	for _, p := range coveragePaths {
		if c.Counts[p] == 0 {
			out = append(out, p)
		}
	}
	return out
}

// Table prints the coverage table: every listed path, then any other path
// reached, with its count and the seeds that reached it.
func (c *Coverage) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "coverage over %d seeds (path: reaches, seeds):\n", c.Seeds)
	listed := map[string]bool{}
	for _, p := range coveragePaths {
		listed[p] = true
		mark := ""
		if c.Counts[p] == 0 {
			mark = "   <-- NEVER REACHED"
		}
		fmt.Fprintf(&b, "  %-50s %8d %6d%s\n", p, c.Counts[p], c.SeedsN[p], mark)
	}
	for _, p := range sortedStrings(c.Counts) {
		if !listed[p] {
			fmt.Fprintf(&b, "  %-50s %8d %6d   (not required)\n", p, c.Counts[p], c.SeedsN[p])
		}
	}
	return b.String()
}
