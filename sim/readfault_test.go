package sim

import (
	"flag"
	"strings"
	"testing"
)

// openBugs runs the tests of open, named bugs, which are skipped otherwise.
var openBugs = flag.Bool("open-bugs", false, "run the tests of known open bugs (skipped otherwise)")

// readFaultSeeds are the seeds TestHeavyReadFaultsLoseNothing runs.
const readFaultSeeds = 16

// A failed read is not damage. With 30% of reads failing (the drawn seeds
// fail at most 0.5%), seed 14 once showed a read fault taken for a
// damaged entry: repair discarded the controller's intact entries and the
// replica came back with its commit index at 0 (commit-lost-in-crash).
// Every seed must pass, and read faults must really have been injected.
//
// Disk replacement is left out here: with it, seed 14 shows an open bug
// (TestReplacedVoterUnderHeavyReadFaults, docs/testing.md "Open bugs").
func TestHeavyReadFaultsLoseNothing(t *testing.T) {
	injected := 0
	for seed := int64(1); seed <= readFaultSeeds; seed++ {
		o := ChooseOptions(seed)
		o.IdempotentProb = 1
		o.Faults.More.ReadFail = 0.3
		o.Faults.ReplaceDisk = 0
		res := Run(o)
		if res.Failed() {
			t.Errorf("FAIL seed %d: %s", seed, strings.Join(res.Violations, "; "))
		}
		injected += res.Coverage[covReadFail]
	}
	if injected == 0 {
		t.Fatalf("no read fault injected in %d seeds", readFaultSeeds)
	}
}

// TestReplacedVoterUnderHeavyReadFaults is an OPEN BUG, found 2026-12-03
// when disk replacement joined the default fault set: seed 14 of the
// heavy read-fault run, with the disk replacement its seed draws, ends
// with two leaders of the controller group in term 3
// (two-leaders-in-a-term). n2's disk is replaced at 0.39 s; n2.3 starts
// at 1.10 s on the empty disk and acts as controller leader of a new
// cluster (it plans with "0 available brokers") while n1 and n3 restart
// again and again on injected read faults. The seed passes with disk
// replacement off. Not yet diagnosed further; the test is skipped until
// it is fixed, so that the open bug stays named in the code.
func TestReplacedVoterUnderHeavyReadFaults(t *testing.T) {
	if testing.Short() || !*openBugs {
		t.Skip("open bug (docs/testing.md \"Open bugs\"): run with -open-bugs to reproduce")
	}
	o := ChooseOptions(14)
	o.IdempotentProb = 1
	o.Faults.More.ReadFail = 0.3
	if o.Faults.ReplaceDisk == 0 {
		t.Fatal("seed 14 no longer draws disk replacement; pick the seed again")
	}
	if res := Run(o); res.Failed() {
		t.Errorf("seed 14: %s", strings.Join(res.Violations, "; "))
	}
}
