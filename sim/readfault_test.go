package sim

import (
	"strings"
	"testing"
)

// readFaultSeeds are the seeds TestHeavyReadFaultsLoseNothing runs.
const readFaultSeeds = 16

// A failed read is not damage. With 30% of reads failing (the drawn seeds
// fail at most 0.5%), seed 14 once showed a read fault taken for a
// damaged entry: repair discarded the controller's intact entries and the
// replica came back with its commit index at 0 (commit-lost-in-crash).
// Every seed must pass, and read faults must really have been injected.
// The seeds keep the disk replacement they draw (seed 14's found
// TestReplacedVoterUnderHeavyReadFaults).
func TestHeavyReadFaultsLoseNothing(t *testing.T) {
	injected := 0
	for seed := int64(1); seed <= readFaultSeeds; seed++ {
		o := ChooseOptions(seed)
		o.IdempotentProb = 1
		o.Faults.More.ReadFail = 0.3
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

// TestReplacedVoterUnderHeavyReadFaults: seed 14 of the heavy read-fault
// run, with the disk replacement its seed draws, once ended with two
// leaders of the controller group in term 3 (two-leaders-in-a-term). n2's
// disk was replaced at 0.39 s; n2.2 formatted the empty directory (wrote
// its disk id) and failed on a read fault opening the controller log,
// before the controller's lost-log fence was written; n2.3 found a disk
// id, took the directory for a formatted one, and opened the controller
// replica unfenced: it voted, its term and vote forgotten, in a term it
// had voted in on its old disk. The fence is now durable before the disk
// id (node/disk.go loadDiskID).
func TestReplacedVoterUnderHeavyReadFaults(t *testing.T) {
	o := ChooseOptions(14)
	o.IdempotentProb = 1
	o.Faults.More.ReadFail = 0.3
	if o.Faults.ReplaceDisk == 0 {
		t.Fatal("seed 14 no longer draws disk replacement; pick the seed again")
	}
	res := Run(o)
	if res.Failed() {
		t.Errorf("seed 14: %s", strings.Join(res.Violations, "; "))
	}
	if res.Coverage[covReadFail] == 0 || res.Coverage[covDiskReplaced] == 0 {
		t.Fatal("seed 14 injected no read fault or replaced no disk; pick the seed again")
	}
}
