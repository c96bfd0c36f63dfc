//go:build floe_bugs

package consensus

import (
	"strings"
	"testing"

	"github.com/floe-broker/floe/internal/datadriven"
	"github.com/floe-broker/floe/internal/plant"
)

// TestPlantedBugScenarios proves the scripts can fail: with a bug planted,
// the script that covers it no longer produces its expected output.
//
//	go test -tags floe_bugs -run PlantedBug ./consensus
func TestPlantedBugScenarios(t *testing.T) {
	cases := []struct {
		bug, script, mustDiffer string
	}{
		// 3, whose log is behind, is no longer refused the vote.
		{plant.VoteWithoutLogCheck, "testdata/election.txt", "1->3 MsgVoteResp Term:2 Rejected"},
		// 1 commits x, a term-1 entry, in (c) by counting replicas.
		{plant.CommitPrevTerm, "testdata/figure8.txt", "1: StateLeader (Voter) Term:3 Lead:1 Commit:11"},
		// A second change is accepted while the first is not applied.
		{plant.ConfTwoPending, "testdata/confchange.txt", "error: consensus: proposal dropped"},
		// A leader whose term's first entry is not applied yet accepts one.
		{plant.ConfBeforeOwnTerm, "testdata/confchange_voters.txt", "refused: consensus: a membership change is still in progress"},
	}
	for _, tc := range cases {
		t.Run(tc.bug, func(t *testing.T) {
			plant.Reset()
			plant.Set(tc.bug)
			defer plant.Reset()
			env := &scenarioEnv{cut: map[[2]uint64]bool{}}
			diffs := datadriven.Diff(t, tc.script, env.handle)
			if len(diffs) == 0 {
				t.Fatalf("with %s planted, %s still passes", tc.bug, tc.script)
			}
			found := false
			for _, d := range diffs {
				found = found || strings.Contains(d, tc.mustDiffer)
			}
			if !found {
				t.Fatalf("with %s planted, %s differs, but not where %q is expected:\n%s", tc.bug, tc.script, tc.mustDiffer, diffs[0])
			}
			t.Logf("%s caught by %s:\n%s", tc.bug, tc.script, diffs[0])
		})
	}
}
