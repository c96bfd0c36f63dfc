package lint

import (
	"fmt"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"
)

// setCore sets the -core flag for one test.
func setCore(t *testing.T, patterns string) {
	t.Helper()
	if err := Determinism.Flags.Set("core", patterns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Determinism.Flags.Set("core", "") })
}

// The bad fixture holds every forbidden construct, each with a `// want`
// comment: analysistest fails on a missing or an unexpected diagnostic.
func TestBadFixtureReportsEveryConstruct(t *testing.T) {
	setCore(t, "bad")
	analysistest.Run(t, analysistest.TestData(), Determinism, "bad")
}

// The good fixture uses everything allowed (time.Duration, *rand.Rand
// methods, //floe:unordered with a reason, sorted keys): no diagnostics.
func TestGoodFixtureIsClean(t *testing.T) {
	setCore(t, "good")
	analysistest.Run(t, analysistest.TestData(), Determinism, "good")
}

// The fixture tree under testdata/src/github.com/floe-broker/floe mirrors the
// real layout, so this checks the real core list and its exemptions: runtime
// packages, osfs*.go, clock/real.go, test files and non-core packages are
// quiet; the rest is reported.
func TestModuleCoreList(t *testing.T) {
	setCore(t, "")
	analysistest.Run(t, analysistest.TestData(), Determinism, Module+"/...")
}

// recorder is an analysistest.Testing that keeps errors instead of failing.
type recorder struct{ errs []string }

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// Outside the core set, even the bad fixture is not reported: the gate works.
func TestNonCorePackageIsQuiet(t *testing.T) {
	setCore(t, "")
	r := &recorder{}
	results := analysistest.Run(r, analysistest.TestData(), Determinism, "bad")
	if len(results) != 1 {
		t.Fatalf("got %d results, want 1", len(results))
	}
	if n := len(results[0].Diagnostics); n != 0 {
		t.Errorf("non-core package got %d diagnostics, want 0; first: %s", n, results[0].Diagnostics[0].Message)
	}
	if len(r.errs) == 0 {
		t.Error("analysistest found every `want` in bad although the package is not core")
	}
}
