package consensus

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/floe-broker/floe/internal/datadriven"
)

// runScript runs scenario commands (scenario_test.go) and returns their
// output, for tests that check a property rather than a transcript.
func runScript(t *testing.T, env *scenarioEnv, lines ...string) string {
	t.Helper()
	var b strings.Builder
	for i, line := range lines {
		c, err := datadriven.ParseCmd(fmt.Sprintf("script:%d", i+1), line)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s\n%s", line, env.handle(t, c))
	}
	return b.String()
}

// committedConflict reports two members whose committed logs hold
// different terms at one index ("" if none).
func committedConflict(env *scenarioEnv) string {
	for _, a := range env.nodes {
		for _, b := range env.nodes {
			if a.id >= b.id {
				continue
			}
			la, lb := a.rn.raft.log, b.rn.raft.log
			lo := max(la.firstIndex(), lb.firstIndex())
			for i := lo; i <= min(la.committed, lb.committed); i++ {
				ta, tb := la.termOrZero(i), lb.termOrZero(i)
				if ta != tb {
					return fmt.Sprintf("entry %d committed with term %d on %d and term %d on %d", i, ta, a.id, tb, b.id)
				}
			}
		}
	}
	return ""
}

// staleCandidateSetup is seed 953843's group in small. Voters [1 2 3] with
// learner 4; leader 2 promotes 4 and removes 3, so the voters are [1 2 4];
// 1 is cut off while 2 and 4 commit entry 16. 1 then restarts with its
// applied index, durable commit and membership of index 12, before both
// changes (its log, to 15, holds them); 3, removed, still answers votes.
func staleCandidateSetup(t *testing.T, prevote bool) (*scenarioEnv, string) {
	env := &scenarioEnv{cut: map[[2]uint64]bool{}}
	add := "add-nodes 4 voters=(1,2,3) learners=(4) index=10"
	if prevote {
		add += " prevote=true"
	}
	out := runScript(t, env,
		add,
		"campaign 2", "stabilize", // 2 leads term 1; entry 11 is its own
		"propose 2 x", "stabilize", // 12
		"propose-conf-change 2 add-voter 4", "stabilize", // 13
		"propose 2 y", "stabilize", // 14
		"propose-conf-change 2 remove 3", "stabilize", // 15
		"isolate 1",
		"propose 2 z", "stabilize 2 3 4", // 16, committed by 2 and 4
		"heal",
		"restart 1 applied=12 voters=(1,2,3) learners=(4)",
		"raft-state",
	)
	if !strings.Contains(out, "2: StateLeader (Voter) Term:1 Lead:2 Commit:16 Last:16") ||
		!strings.Contains(out, "4: StateFollower (Voter) Term:1 Lead:2 Commit:16 Last:16") ||
		!strings.Contains(out, "1: StateFollower (Voter) Term:1 Lead:0 Commit:12 Last:15") {
		t.Fatalf("setup did not reach the state it needs:\n%s", out)
	}
	return env, out
}

// TestCandidateBehindTwoChangesCannotWin: a candidate whose applied
// membership is two changes behind its log must not win in it with the
// vote of a removed member (sim seed 953843). Before newestconf.go, 1 won
// with {1, 3} in [1 2 3], and committed its own entry 16 over the group's.
func TestCandidateBehindTwoChangesCannotWin(t *testing.T) {
	for _, prevote := range []bool{false, true} {
		t.Run(fmt.Sprintf("prevote=%v", prevote), func(t *testing.T) {
			env, setup := staleCandidateSetup(t, prevote)
			out := runScript(t, env, "campaign 1", "stabilize", "raft-state")
			if st := env.nodes[0].rn.raft.state; st == StateLeader {
				t.Errorf("1 won in its applied membership [1 2 3], two changes behind its log:\n%s%s", setup, out)
			}
			if c := committedConflict(env); c != "" {
				t.Errorf("%s\n%s%s", c, setup, out)
			}
		})
	}
}

// TestLeaderCommitsInNewestMembership: a leader elected with changes in
// its log beyond its applied index counts its commits in the newest
// membership too. Here 1 wins fairly in both ([1 2 3] with 3, [1 2 4]
// with 4), but only 3 receives its first entry: a majority of [1 2 3]
// and none of [1 2 4], so the entry is not committed (2 and 4 could still
// elect 2 without it). Once 4 holds it, it is.
func TestLeaderCommitsInNewestMembership(t *testing.T) {
	env := &scenarioEnv{cut: map[[2]uint64]bool{}}
	setup := runScript(t, env,
		"add-nodes 4 voters=(1,2,3) learners=(4) index=10",
		"campaign 2", "stabilize",
		"propose 2 x", "stabilize", // 12
		"propose-conf-change 2 add-voter 4", "stabilize", // 13
		"propose 2 y", "stabilize", // 14
		"propose-conf-change 2 remove 3", "stabilize", // 15, committed on 2 and 4
		"restart 1 applied=12 voters=(1,2,3) learners=(4)",
		"cut 1 2",
		"campaign 1", "process-ready 1", "deliver-msgs 3 4", "process-ready 3 4",
		"deliver-msgs 1", // votes of 3 and 4: 1 leads term 2
		"cut 1 4",
		"stabilize 1 3", // entry 16 reaches 3 only
		"raft-state",
	)
	r := env.nodes[0].rn.raft
	if r.state != StateLeader {
		t.Fatalf("1 should lead with votes in both memberships:\n%s", setup)
	}
	if r.log.committed >= 16 {
		t.Fatalf("1 committed entry 16 with 1 and 3 only, no majority of [1 2 4]:\n%s", setup)
	}
	out := runScript(t, env, "heal", "tick-heartbeat 1", "stabilize 1 3 4", "raft-state")
	if r.log.committed < 16 {
		t.Fatalf("1 did not commit entry 16 once 4 held it:\n%s%s", setup, out)
	}
	if c := committedConflict(env); c != "" {
		t.Errorf("%s\n%s%s", c, setup, out)
	}
}

// TestUncommittedChangeAtTailStillElects is the liveness side: a leader
// proposes a change (adding voter 4) and is cut off before committing it.
// A member holding the change counts votes in [1 2 3] and in [1 2 3 4],
// and wins with 3 and 4; the change is then committed and applied.
func TestUncommittedChangeAtTailStillElects(t *testing.T) {
	env := &scenarioEnv{cut: map[[2]uint64]bool{}}
	out := runScript(t, env,
		"add-nodes 4 voters=(1,2,3) learners=(4) index=10",
		"campaign 1", "stabilize",
		"propose 1 x", "stabilize", // 12
		"propose-conf-change 1 add-voter 4",                    // 13
		"process-ready 1", "deliver-msgs 2", "process-ready 2", // 2 holds it
		"isolate 1",
		"campaign 2", "stabilize 2 3 4",
		"raft-state",
	)
	r := env.nodes[1].rn.raft
	if r.state != StateLeader {
		t.Fatalf("2 should win with 3 and 4:\n%s", out)
	}
	if r.log.committed < 14 || !r.trk.isVoter(4) {
		t.Fatalf("2 should commit the change and its own entry and apply the change:\n%s", out)
	}
}

// removedMemberGoneSetup is sim seed 1603770's __consumer_offsets-0 in
// small. Voters [1 2 3 4]; leader 1 removes 2 (entry 13) while 3 is cut
// off, so 1, 2 and 4 hold it and it is committed; 2 applies its removal
// and deletes its replica (here: is cut off for good). 4 restarts with
// the applied index, durable commit and membership of index 12, before
// the removal its log holds. Then 1 is out: fenced (the seed: its log
// lost to a lying fsync, of unknown extent, so it votes for no log of its
// term but still takes a leader's entries) or down. Either way the
// committed membership [1 3 4] has 3 and 4 up, connected and holding
// every committed entry between them.
func removedMemberGoneSetup(t *testing.T, prevote, fenced bool) (*scenarioEnv, string) {
	env := &scenarioEnv{cut: map[[2]uint64]bool{}}
	add := "add-nodes 4 voters=(1,2,3,4) index=10"
	if prevote {
		add += " prevote=true"
	}
	out1 := "lose-entries 1 11 unknown-extent=true"
	if !fenced {
		out1 = "isolate 1"
	}
	out := runScript(t, env,
		add,
		"campaign 1", "stabilize", // 1 leads term 1; entry 11 is its own
		"propose 1 x", "stabilize", // 12
		"isolate 3",
		"propose-conf-change 1 remove 2", "stabilize 1 2 4", // 13, committed by 1, 2 and 4
		"heal",
		"isolate 2", // removed, its replica deleted
		"restart 4 applied=12 voters=(1,2,3,4)",
		out1,
		"raft-state",
	)
	if !strings.Contains(out, "2: StateFollower (NonMember) Term:1 Lead:1 Commit:13 Last:13") ||
		!strings.Contains(out, "4: StateFollower (Voter) Term:1 Lead:0 Commit:12 Last:13") ||
		!strings.Contains(out, "3: StateFollower (Voter) Term:1 Lead:1 Commit:12 Last:12") {
		t.Fatalf("setup did not reach the state it needs:\n%s", out)
	}
	if fenced {
		if f := env.nodes[0].rn.VoteFence(); f.Index != math.MaxUint64 || f.Term != 1 {
			t.Fatalf("1 should be fenced at any index of term 1, is %+v:\n%s", f, out)
		}
	}
	return env, out
}

// TestRemovedMemberGoneStillElects is the liveness side of the newest
// membership (sim seed 1603770): once a removal is committed the removed
// member may go (a broker deletes its replica), so a member whose log
// holds the removal beyond its applied index must win, and commit, with a
// majority of the newest membership alone. Before, 4 also needed a
// majority of its applied [1 2 3 4], 3 of 4: with 2 gone and 1 fenced it
// never won, and the partition stayed leaderless for good; with 1 down it
// won in neither either (and, elected, would have committed nothing).
func TestRemovedMemberGoneStillElects(t *testing.T) {
	for _, fenced := range []bool{true, false} {
		for _, prevote := range []bool{false, true} {
			t.Run(fmt.Sprintf("fenced=%v/prevote=%v", fenced, prevote), func(t *testing.T) {
				env, setup := removedMemberGoneSetup(t, prevote, fenced)
				out := runScript(t, env, "campaign 4", "stabilize 1 3 4", "raft-state")
				r := env.nodes[3].rn.raft
				if r.state != StateLeader {
					t.Fatalf("4 should win with 3 in the newest membership [1 3 4]:\n%s%s", setup, out)
				}
				if r.log.committed < 14 || r.trk.isVoter(2) {
					t.Fatalf("4 should commit the removal and its own entry and apply the removal:\n%s%s", setup, out)
				}
				if f := env.nodes[0].rn.VoteFence(); fenced && !f.IsZero() {
					t.Errorf("1 should be unfenced by the entry of term 2, is %+v:\n%s%s", f, setup, out)
				}
				if c := committedConflict(env); c != "" {
					t.Errorf("%s\n%s%s", c, setup, out)
				}
			})
		}
	}
}
