package consensus

import (
	"fmt"
	"strings"
	"testing"
)

// crashLosingTail makes n lose every entry after index, as a member that
// crashes before its fsync does: nothing it acknowledged is lost, so no
// vote fence; its log and commit index are cut and it restarts.
func crashLosingTail(t *testing.T, env *scenarioEnv, n *scenarioNode, index uint64) {
	t.Helper()
	ms := n.storage.MemoryStorage
	if index < ms.ents[0].Index || index >= ms.lastIndex() {
		t.Fatalf("cannot cut %d's log (%d..%d) after %d", n.id, ms.firstIndex(), ms.lastIndex(), index)
	}
	ms.ents = ms.ents[:index-ms.ents[0].Index+1]
	hs := ms.hardState
	hs.Commit = min(hs.Commit, index)
	ms.hardState = hs
	n.applied = min(n.applied, index)
	if out := env.restart(t, n); out != "" {
		t.Fatal(out)
	}
}

// promotedLearnerSetup is sim seed 1071630's group g20 (simtxn-0) in
// small: voters [1 2 3] (the seed's 5, 1, 3), learner 4. Leader 1 proposes
// "add voter 4" (13), which reaches 3 and 4 but is not committed; 1
// restarts, wins term 2 with the votes of 2 and 4 (3 cut off), and its
// first entry of the term (14) reaches 4 only before 1 crashes and loses
// it with no fsync. 3 then loses entries it had acknowledged (a lying
// fsync: the extent is unknown, so its fence admits only a log of a later
// term than its own, 1). Only 4's log (2/14) is one that 3's fence, 4 and
// so a majority of the newest membership [1 2 3 4] accept, and 4 is a
// learner of its applied membership [1 2 3].
func promotedLearnerSetup(t *testing.T, prevote bool) (*scenarioEnv, string) {
	env := &scenarioEnv{cut: map[[2]uint64]bool{}}
	out := runScript(t, env,
		"add-nodes 4 voters=(1,2,3) learners=(4) index=10",
		"campaign 1", "stabilize", // 1 leads term 1; entry 11
		"propose 1 x", "stabilize", // 12, committed and applied everywhere
		"propose-conf-change 1 add-voter 4", "process-ready 1", // 13
		"drop-msgs to=(2)",
		"deliver-msgs 3 4", "process-ready 3 4",
		"drop-msgs to=(1)", // 13 stays uncommitted
		"restart 1",
		"isolate 3",
		"campaign 1", "process-ready 1", "deliver-msgs 2 4", "process-ready 2 4",
		"deliver-msgs 1", "process-ready 1", // 1 leads term 2 with 2 and 4; its entry 14
		"drop-msgs to=(2)", "deliver-msgs 4", "process-ready 4", // 14 reaches 4 only
		"drop-msgs to=(1)",
		"raft-state",
	)
	if r := env.nodes[0].rn.raft; r.state != StateLeader || r.term != 2 {
		t.Fatalf("setup: 1 should lead term 2:\n%s", out)
	}
	// Only 4 keeps entry 14: 1 loses it in a crash before its fsync.
	crashLosingTail(t, env, env.nodes[0], 13)
	out += runScript(t, env,
		"lose-entries 3 12 unknown-extent=true",
		"vote-fence 3",
		"heal",
		"raft-state",
	)
	if !strings.Contains(out, "4: StateFollower (Learner) Term:2 Lead:1 Commit:12 Last:14") ||
		!strings.Contains(out, "fence 1/any") {
		t.Fatalf("setup did not reach the state it needs:\n%s", out)
	}
	// The elections to come with pre-vote or without (the setup's own
	// election is scripted without).
	for _, n := range env.nodes {
		n.cfg.PreVote, n.rn.raft.preVote = prevote, prevote
	}
	return env, out
}

// TestPromotedLearnerWithNewestLogCampaigns: a learner that is a voter of
// the newest membership in its log may campaign, and when its log is the
// only one a majority of that membership accepts, it must (sim seed
// 1071630 with --all-faults: simtxn-0 had no leader for the 30 s after
// the heal, so its cancelled reassignment never settled and the balancer
// never came to rest). Before the fix only applied voters campaigned: 1
// and 2 lost every election and 4 never stood.
func TestPromotedLearnerWithNewestLogCampaigns(t *testing.T) {
	for _, prevote := range []bool{false, true} {
		t.Run(fmt.Sprintf("prevote=%v", prevote), func(t *testing.T) {
			env, setup := promotedLearnerSetup(t, prevote)
			var out string
			leader := func() *scenarioNode {
				for _, n := range env.nodes {
					if n.rn.raft.state == StateLeader {
						return n
					}
				}
				return nil
			}
			for round := 0; round < 20 && leader() == nil; round++ {
				for _, n := range env.nodes {
					n.rn.raft.randomizedElectionTicks = n.cfg.ElectionTicks + int(n.id)
				}
				for _, n := range env.nodes {
					env.tickElection(n)
					out += env.stabilize([]uint64{1, 2, 3, 4})
				}
			}
			out += env.raftState()
			l := leader()
			if l == nil {
				t.Fatalf("no leader after 20 election rounds:\n%s%s", setup, env.raftState())
			}
			out += env.stabilize([]uint64{1, 2, 3, 4}) + env.raftState()
			if r := l.rn.raft; r.log.committed < 15 || !r.trk.isVoter(4) {
				t.Fatalf("%d leads but did not commit the change and apply it:\n%s%s", l.id, setup, env.raftState())
			}
			if c := committedConflict(env); c != "" {
				t.Errorf("%s\n%s%s", c, setup, out)
			}
		})
	}
}
