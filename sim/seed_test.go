package sim

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/floe-broker/floe/sim/world"
)

// Seed plumbing for every simulator test in this package.
//
//	go test ./sim                         default seeds (1..n per test)
//	go test ./sim -seeds 500              more seeds
//	go test ./sim -run TestX -seed 42 -v  replay one seed
//
// A failing seed logs the command that replays it.
var (
	seedOnly  int64
	seedIsSet bool
	seedCount = flag.Int("seeds", 0, "seeds per simulator test (0: each test's default)")
)

func init() {
	flag.Func("seed", "run simulator tests with only this seed (replay a failure)", func(s string) error {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return err
		}
		seedOnly, seedIsSet = v, true
		return nil
	})
}

// testSeeds returns the seeds a test runs: the -seed flag alone if given,
// else 1..n where n is -seeds or the test's default.
func testSeeds(defaultCount int) []int64 {
	if seedIsSet {
		return []int64{seedOnly}
	}
	n := defaultCount
	if *seedCount > 0 {
		n = *seedCount
	}
	seeds := make([]int64, n)
	for i := range seeds {
		seeds[i] = int64(i + 1)
	}
	return seeds
}

// forEachSeed runs fn as a subtest per seed. A failing subtest logs its seed
// and the command that replays it.
func forEachSeed(t *testing.T, defaultCount int, fn func(t *testing.T, seed int64)) {
	t.Helper()
	for _, seed := range testSeeds(defaultCount) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("FAILED at seed %d; replay with:\n\t%s", seed, replayCommand(t, seed))
				}
			})
			fn(t, seed)
		})
	}
}

// replayCommand is the command that reruns test t at seed.
func replayCommand(t *testing.T, seed int64) string {
	top, _, _ := strings.Cut(t.Name(), "/")
	return fmt.Sprintf("go test ./sim -run '^%s$' -seed %d -v", top, seed)
}

func TestTestSeeds(t *testing.T) {
	if seedIsSet || *seedCount > 0 {
		t.Skip("seed flags given")
	}
	if got := testSeeds(3); fmt.Sprint(got) != "[1 2 3]" {
		t.Errorf("testSeeds(3) = %v, want [1 2 3]", got)
	}
	seedOnly, seedIsSet = 42, true
	defer func() { seedOnly, seedIsSet = 0, false }()
	if got := testSeeds(3); fmt.Sprint(got) != "[42]" {
		t.Errorf("with -seed 42: testSeeds(3) = %v, want [42]", got)
	}
	if got := flag.Lookup("seed"); got == nil {
		t.Error("no -seed flag registered")
	}
}

func TestReplayCommand(t *testing.T) {
	t.Run("seed=7", func(t *testing.T) {
		want := "go test ./sim -run '^TestReplayCommand$' -seed 7 -v"
		if got := replayCommand(t, 7); got != want {
			t.Errorf("replayCommand = %q, want %q", got, want)
		}
	})
}

// firstDiff describes the first line where two traces differ.
var firstDiff = world.FirstDiff
