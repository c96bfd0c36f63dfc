// Package assert makes the invariants that comments state loud where a
// violation can be caught: in tests and in the simulator. In production
// they cost nothing beyond the check the code already makes.
//
// Use: at the branch where the code meets a state its invariants rule out
// (where it clamps or refuses today), call Failf; it panics when
// assertions are on and does nothing otherwise, so the branch keeps its
// safe production behaviour. A check that costs something to compute is
// guarded with Enabled:
//
//	if assert.Enabled() && applied > commit {
//		assert.Failf("replica %d: applied %d > commit %d", g, applied, commit)
//	}
//
// On: in every test binary (testing.Testing), and wherever Enable is
// called (the simulator's Run). Off: in the broker (floe serve), where
// Enabled is a load of one bool and Failf is never reached on the happy
// path; BenchmarkGuardOff measures the guard.
//
// A violation is a bug, never bad input: input is refused with an error
// (house rule), and only a state the code itself produced may be asserted.
package assert
