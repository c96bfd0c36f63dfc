package sim

import (
	"strings"
	"testing"
)

// The invariants skip inspecting a node that ran nothing since the last
// check and only refresh what its views read from its clock
// (invariants.look, node.Inspector.Refresh). Here every such refresh is
// compared with a full inspection, over seeds with retention by time
// (whose bound moves with the clock), leases, pauses (a paused node runs
// nothing for a while) and every optional fault: any difference fails
// the seed, and some refreshes must have been compared.
func TestRefreshedLooksEqualFullOnes(t *testing.T) {
	var opts []Options
	for seed := int64(1); len(opts) < 3; seed++ {
		if o := ChooseOptions(seed); o.Retention.On && !o.Retention.Compact && o.Retention.Ms >= 0 && o.Faults.Pause > 0 {
			opts = append(opts, o)
		}
	}
	all := ChooseOptions(11).WithCorruption().WithReassign()
	all.Faults.Buggify = true
	opts = append(opts, all)
	if seedIsSet {
		opts = []Options{simOptions(testSeeds(1)[0])}
	}
	for _, o := range opts {
		o.checkQuiet, o.TraceKeep = true, -1
		res := Run(o)
		if res.Failed() {
			t.Errorf("seed %d failed:\n%s", o.Seed, res.Summary())
			continue
		}
		compared := ""
		for _, l := range res.Trace {
			if strings.Contains(l, "refreshed looks compared") {
				compared = l
			}
		}
		if compared == "" || strings.Contains(compared, "| invariants: 0 refreshed") {
			t.Errorf("seed %d: no refreshed look was compared (%q)", o.Seed, compared)
		}
		t.Logf("seed %d: %s", o.Seed, compared[strings.Index(compared, "invariants:"):])
	}
}

// The balancer checks skip a broker's metadata when neither it
// (node.Reactor.MetadataChanges) nor their own memory changed since a look
// that failed nothing (observeBalance). Here every skipped look is done
// all the same, over seeds that run the balancer (one with every optional
// fault), and must have done nothing: no move recorded, no completion
// counted, no fail. Some looks must have been skipped.
func TestSkippedBalanceLooksDoNothing(t *testing.T) {
	var opts []Options
	for seed := int64(1); len(opts) < 3; seed++ {
		if o := ChooseOptions(seed); o.Balance.On {
			opts = append(opts, o)
		}
	}
	for seed := int64(1); len(opts) < 4; seed++ {
		all := ChooseOptions(seed).WithCorruption().WithReassign()
		all.Faults.Buggify = true
		if all.Balance.On {
			opts = append(opts, all)
		}
	}
	if seedIsSet {
		opts = []Options{simOptions(testSeeds(1)[0])}
	}
	for _, o := range opts {
		o.checkBalanceSkips, o.TraceKeep = true, -1
		res := Run(o)
		if res.Failed() {
			t.Errorf("seed %d failed:\n%s", o.Seed, res.Summary())
			continue
		}
		checked := ""
		for _, l := range res.Trace {
			if strings.Contains(l, "skipped looks checked") {
				checked = l
			}
		}
		if o.Balance.On && (checked == "" || strings.Contains(checked, "| balance: 0 skipped")) {
			t.Errorf("seed %d: no skipped balance look was checked (%q)", o.Seed, checked)
		}
		t.Logf("seed %d: %s", o.Seed, checked)
	}
}
