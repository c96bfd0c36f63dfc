package consensus

import (
	"fmt"
	"strings"
	"testing"
)

// Reads and check-quorum in the newest membership (newestconf.go).
//
// A leader elected with two changes in its log beyond its applied index
// (a committed change it has not applied and the next one) takes its
// decisions in the newest membership of its log; until it applies both,
// its applied membership is two changes behind. Two changes apart, a
// majority of the applied membership need not overlap one of the newest:
// here [1 2 3] and [1 2 3 4 5], where {1, 2} and {3, 4, 5} are
// majorities. A read confirmed (ReadIndex, and so a read lease) or a
// leadership kept (check-quorum) by {1, 2} says nothing of what {3, 4, 5}
// elect and commit meanwhile.

// applyLagSetup: voters [1 2 3], learners 4 and 5. Leader 2 writes 12 to
// 31, promotes 4 (entry 32) and 5 (34); all hold and apply them. 2 goes
// down; 1 restarts with the applied index, durable commit and membership
// of index 12 and applies at most one entry per Ready (a member far
// behind its commit index applies in bounded steps,
// Config.MaxCommittedBytesPerReady; in a node, the apply also waits for
// fsync rounds). 1 wins term 2 in [1 2 3 4 5] with 3 and 4 and commits
// its entry 35 with 3, 4 and 5; it has applied only 13 of the 22 entries
// then committed, so its applied membership is still [1 2 3]. Then 1 is
// cut off from 3, 4 and 5 with 2 (back, and reaching 1 only), and 3 wins
// term 3 with 4 and 5 and commits 36 and 37.
func applyLagSetup(t *testing.T, checkQuorum bool) (*scenarioEnv, string) {
	env := &scenarioEnv{cut: map[[2]uint64]bool{}}
	add := "add-nodes 5 voters=(1,2,3) learners=(4,5) index=10"
	if checkQuorum {
		add += " checkquorum=true"
	}
	lines := []string{add, "campaign 2", "stabilize"} // 11
	for i := 12; i <= 31; i++ {
		lines = append(lines, fmt.Sprintf("propose 2 v%d", i))
	}
	lines = append(lines, "stabilize",
		"propose-conf-change 2 add-voter 4", "stabilize", // 32
		"propose 2 y", "stabilize", // 33
		"propose-conf-change 2 add-voter 5", "stabilize", // 34
		"isolate 2",
	)
	out := runScript(t, env, lines...)
	env.nodes[0].cfg.MaxCommittedBytesPerReady = 1
	lines = []string{"restart 1 applied=12 voters=(1,2,3) learners=(4,5)"}
	if checkQuorum {
		// A restarted member keeps its lease promise for an election
		// timeout before it may campaign (raft.go quietTicks); the others
		// must no longer be in 2's lease. No timer fires meanwhile.
		for _, id := range []int{1, 3, 4, 5} {
			lines = append(lines, fmt.Sprintf("set-randomized-election-timeout %d 100", id), fmt.Sprintf("tick %d 10", id))
		}
	}
	lines = append(lines,
		"campaign 1", "process-ready 1", "deliver-msgs 3 4 5", "process-ready 3 4 5",
		"deliver-msgs 1", // 1 leads term 2
		"process-ready 1", "deliver-msgs 3 4 5", "process-ready 3 4 5",
		"deliver-msgs 1",  // 35 committed
		"process-ready 1", // applies 13
		"heal", "cut 1 3", "cut 1 4", "cut 1 5", "cut 2 3", "cut 2 4", "cut 2 5",
	)
	if checkQuorum {
		lines = append(lines, "tick 3 10", "tick 4 10", "tick 5 10") // out of 1's lease
	}
	lines = append(lines,
		"campaign 3", "stabilize 3 4 5", // 3 leads term 3; 36
		"propose 3 z", "stabilize 3 4 5", // 37
		"raft-state",
	)
	out += runScript(t, env, lines...)
	r1 := env.nodes[0].rn.raft
	if !strings.Contains(out, "1: StateLeader (Voter) Term:2 Lead:1 Commit:35 Last:35") ||
		!strings.Contains(out, "3: StateLeader (Voter) Term:3 Lead:3 Commit:37 Last:37") ||
		r1.log.applied >= 32 || r1.trk.isVoter(4) {
		t.Fatalf("setup did not reach the state it needs (1 applied %d):\n%s", r1.log.applied, out)
	}
	return env, out
}

// TestReadIndexCountsNewestMembership: 1, its applied membership two
// changes behind, must not confirm a read with the acknowledgement of 2
// alone, a majority of [1 2 3] but not of [1 2 3 4 5]: 3 leads term 3
// and has committed 37, and 1 would answer at 35. The same round is what
// extends a node's read lease (node/lease.go), so two leaders would serve
// reads at once.
func TestReadIndexCountsNewestMembership(t *testing.T) {
	env, setup := applyLagSetup(t, false)
	out := runScript(t, env,
		"read-index 1 r1",
		"process-ready 1", "deliver-msgs 2", "process-ready 2", "deliver-msgs 1",
		"process-ready 1", "deliver-msgs 2", "process-ready 2", "deliver-msgs 1",
		"raft-state",
	)
	r1 := env.nodes[0].rn.raft
	if r1.log.applied >= 32 {
		t.Fatalf("1 applied the changes (%d), the window this test needs closed:\n%s%s", r1.log.applied, setup, out)
	}
	for _, rs := range append(env.nodes[0].readStates, r1.readStates...) {
		t.Errorf("1 confirmed read %q at %d while 3 leads term 3 and committed 37:\n%s%s", rs.RequestCtx, rs.Index, setup, out)
	}
}

// TestCheckQuorumCountsNewestMembership: the same leader, hearing only
// from 2 for an election timeout, steps down; counting the active members
// in [1 2 3] it stayed leader of term 2 beside 3, leader of term 3.
func TestCheckQuorumCountsNewestMembership(t *testing.T) {
	env, setup := applyLagSetup(t, true)
	var lines []string
	// Three check-quorum periods (the first still counts 3, 4 and 5),
	// 2 answering in each; one Ready of 1's a period keeps its apply back.
	for i := 0; i < 3; i++ {
		lines = append(lines, "tick 1 10", "process-ready 1", "deliver-msgs 2", "process-ready 2", "deliver-msgs 1")
	}
	lines = append(lines, "raft-state")
	out := runScript(t, env, lines...)
	r1 := env.nodes[0].rn.raft
	if r1.log.applied >= 32 {
		t.Fatalf("1 applied the changes (%d), the window this test needs closed:\n%s%s", r1.log.applied, setup, out)
	}
	if r1.state == StateLeader {
		t.Errorf("1 still leads term 2 after an election timeout hearing only from 2, with 3 leading term 3:\n%s%s", setup, out)
	}
}

// TestReadIndexSingleAppliedVoter: a leader whose applied membership is
// itself alone answered reads at once, with no round at all, though the
// newest membership of its log is [1 2 3]: 1 (voter [1], learners 2 and
// 3) promotes 2 (32) and 3 (34); it restarts applied at 12, wins term 2
// with 2 and commits 35, applying one entry per Ready. Cut off, it must
// not answer a read while 2 leads term 3 with 3 and has committed 37.
func TestReadIndexSingleAppliedVoter(t *testing.T) {
	env := &scenarioEnv{cut: map[[2]uint64]bool{}}
	lines := []string{"add-nodes 3 voters=(1) learners=(2,3) index=10", "campaign 1", "stabilize"} // 11
	for i := 12; i <= 31; i++ {
		lines = append(lines, fmt.Sprintf("propose 1 v%d", i))
	}
	lines = append(lines, "stabilize",
		"propose-conf-change 1 add-voter 2", "stabilize", // 32
		"propose 1 y", "stabilize", // 33
		"propose-conf-change 1 add-voter 3", "stabilize", // 34
	)
	setup := runScript(t, env, lines...)
	env.nodes[0].cfg.MaxCommittedBytesPerReady = 1
	setup += runScript(t, env,
		"restart 1 applied=12 voters=(1) learners=(2,3)",
		"campaign 1", "process-ready 1", "deliver-msgs 2", "process-ready 2",
		"deliver-msgs 1", // 1 leads term 2
		"process-ready 1", "deliver-msgs 2", "process-ready 2",
		"deliver-msgs 1",  // 35 committed
		"process-ready 1", // applies 13
		"isolate 1",
		"campaign 2", "stabilize 2 3", // 2 leads term 3; 36
		"propose 2 z", "stabilize 2 3", // 37
		"raft-state",
	)
	r1 := env.nodes[0].rn.raft
	if !strings.Contains(setup, "1: StateLeader (Voter) Term:2 Lead:1 Commit:35 Last:35") ||
		!strings.Contains(setup, "2: StateLeader (Voter) Term:3 Lead:2 Commit:37 Last:37") ||
		r1.log.applied >= 32 || r1.trk.isVoter(2) {
		t.Fatalf("setup did not reach the state it needs (1 applied %d):\n%s", r1.log.applied, setup)
	}
	out := runScript(t, env,
		"read-index 1 r1",
		"process-ready 1", "process-ready 1", "raft-state",
	)
	if r1.log.applied >= 32 {
		t.Fatalf("1 applied the changes (%d), the window this test needs closed:\n%s%s", r1.log.applied, setup, out)
	}
	for _, rs := range append(env.nodes[0].readStates, r1.readStates...) {
		t.Errorf("1 confirmed read %q at %d while 2 leads term 3 and committed 37:\n%s%s", rs.RequestCtx, rs.Index, setup, out)
	}
	// A node's read lease skips its round for a sole voter (node/lease.go).
	if env.nodes[0].rn.BasicStatus().SoleVoter {
		t.Errorf("1 reports itself the sole voter, [1] applied, [1 2 3] in its log:\n%s%s", setup, out)
	}
}
