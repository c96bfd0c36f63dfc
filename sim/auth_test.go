package sim

import (
	"strings"
	"testing"
)

// TestSimAuth runs seeds with authentication and ACLs forced on (the
// default seeds of TestSim run them in about a third of their seeds).
func TestSimAuth(t *testing.T) {
	forEachSeed(t, 4, func(t *testing.T, seed int64) {
		res := Run(simOptions(seed).WithAuth())
		if testing.Verbose() || res.Failed() {
			t.Log(res.Summary())
		}
		if res.Failed() {
			t.Errorf("seed %d failed; last trace lines:\n\t%s", seed, strings.Join(res.TraceTail(60), "\n\t"))
		}
	})
}
