//go:build floe_bugs

package sim

import (
	"strings"
	"sync"
	"testing"

	"github.com/floe-broker/floe/internal/plant"
)

// Proof that the simulator's checkers can fail: with a known bug planted in
// the product (internal/plant, build tag floe_bugs), the default swarm must
// report a checker or white-box invariant violation (invariants.go) within
// the default seeds (plantedSeedsMax, as many as TestSim runs). Run by make test
// (make planted):
//
//	go test -tags floe_bugs -run PlantedBug ./sim -v
//
// A livelock or a liveness failure alone does not count: the point is that
// the history checkers or the invariants see the damage.

const plantedSeedsMax = simSeedsDefault

func TestPlantedBugAckBeforeQuorum(t *testing.T) { catchPlanted(t, plant.AckBeforeQuorum) }
func TestPlantedBugAckBeforeFsync(t *testing.T)  { catchPlanted(t, plant.AckBeforeFsync) }
func TestPlantedBugVoteWithoutLogCheck(t *testing.T) {
	catchPlanted(t, plant.VoteWithoutLogCheck)
}

// The classes issue 15 measured: each must be caught by the default seeds.
func TestPlantedBugCommitPrevTerm(t *testing.T)   { catchPlanted(t, plant.CommitPrevTerm) }
func TestPlantedBugNoReadLease(t *testing.T)      { catchPlanted(t, plant.NoReadLease) }
func TestPlantedBugVoteNotPersisted(t *testing.T) { catchPlanted(t, plant.VoteNotPersisted) }
func TestPlantedBugFetchPastHighWatermark(t *testing.T) {
	catchPlanted(t, plant.FetchPastHighWatermark)
}
func TestPlantedBugOffsetCommitBeforeReplicated(t *testing.T) {
	catchPlanted(t, plant.OffsetCommitBeforeReplicated)
}
func TestPlantedBugIdempotenceWindowShrunk(t *testing.T) {
	catchPlanted(t, plant.IdempotenceWindowShrunk)
}
func TestPlantedBugNoGenerationFence(t *testing.T) { catchPlanted(t, plant.NoGenerationFence) }

// catchPlanted plants bug and runs seeds 1, 2, ... two at a time until one
// fails a checker. Seeds run in order within each pair, so the verdict is
// the same on every machine.
func catchPlanted(t *testing.T, bug string) { catchPlantedWith(t, bug, nil) }

// catchPlantedWith is catchPlanted with each seed's options changed by
// with (an opt-in fault turned on).
func catchPlantedWith(t *testing.T, bug string, with func(Options) Options) {
	plant.Reset()
	plant.Set(bug)
	defer plant.Reset()
	const workers = 2
	for first := int64(1); first <= plantedSeedsMax; first += workers {
		results := make([]*Result, workers)
		var wg sync.WaitGroup
		for i := range results {
			seed := first + int64(i)
			if seed > plantedSeedsMax {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				o := ChooseOptions(seed)
				if with != nil {
					o = with(o)
				}
				results[i] = Run(o)
			}()
		}
		wg.Wait()
		for _, res := range results {
			if res == nil {
				continue
			}
			if caught := checkerViolations(res); len(caught) > 0 {
				t.Logf("%s caught at seed %d:\n\t%s\nreplay: go test -tags floe_bugs -run %s ./sim (seed %d)",
					bug, res.Options.Seed, strings.Join(caught, "\n\t"), t.Name(), res.Options.Seed)
				return
			}
			if res.Failed() {
				t.Logf("seed %d failed without a checker violation: %v", res.Options.Seed, res.Violations)
			}
		}
	}
	t.Fatalf("planted bug %s not caught by any checker in %d seeds", bug, plantedSeedsMax)
}

func checkerViolations(res *Result) []string {
	var out []string
	for _, v := range res.Violations {
		if strings.HasPrefix(v, "checker: ") && strings.Contains(v, " invalid") || strings.HasPrefix(v, "invariant: ") {
			out = append(out, v)
		}
	}
	return out
}
