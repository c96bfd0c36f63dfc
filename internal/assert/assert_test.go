package assert

import (
	"errors"
	"testing"
)

func TestOnInTests(t *testing.T) {
	if !Enabled() {
		t.Fatalf("assertions are off in a test binary")
	}
	v := Catch(func() { Failf("applied %d > commit %d", 7, 5) })
	if v == nil {
		t.Fatalf("Failf did not panic with assertions on")
	}
	if want := "assertion failed: applied 7 > commit 5"; v.Error() != want {
		t.Fatalf("message %q, want %q", v.Error(), want)
	}
	var err error = *v
	if !errors.As(err, new(Violation)) {
		t.Fatalf("a Violation is not an error of its own type")
	}
}

func TestOffIsSilent(t *testing.T) {
	old := Set(false)
	defer Set(old)
	if v := Catch(func() { Failf("x") }); v != nil {
		t.Fatalf("Failf panicked with assertions off: %v", v)
	}
	Enable()
	if !Enabled() {
		t.Fatalf("Enable did not turn assertions on")
	}
}

var sink uint64

// BenchmarkGuardOff is the production cost of a guarded check that holds:
// compare with BenchmarkNoCheck (the same loop without it).
func BenchmarkGuardOff(b *testing.B) {
	old := Set(false)
	defer Set(old)
	var applied, commit uint64 = 1, 2
	for i := 0; i < b.N; i++ {
		applied++
		commit++
		if Enabled() && applied > commit {
			Failf("applied %d > commit %d", applied, commit)
		}
		sink += applied
	}
}

// BenchmarkFailfBranchOff is the production cost of an unguarded check
// that holds (Failf sits in a branch not taken).
func BenchmarkFailfBranchOff(b *testing.B) {
	old := Set(false)
	defer Set(old)
	var applied, commit uint64 = 1, 2
	for i := 0; i < b.N; i++ {
		applied++
		commit++
		if applied > commit {
			Failf("applied %d > commit %d", applied, commit)
		}
		sink += applied
	}
}

func BenchmarkNoCheck(b *testing.B) {
	var applied, commit uint64 = 1, 2
	for i := 0; i < b.N; i++ {
		applied++
		commit++
		sink += applied
	}
}
