//go:build floe_bugs

package sim

import (
	"strings"
	"sync"
	"testing"

	"github.com/floe-broker/floe/internal/plant"
)

// The transaction planted bugs (issue 16), caught by the transactional
// workload's checkers (txn.go) within plantedSeedsMax seeds.

func TestPlantedBugTxnLSOIgnoresOpen(t *testing.T) { catchPlanted(t, plant.TxnLSOIgnoresOpen) }
func TestPlantedBugTxnMarkerBeforeDecision(t *testing.T) {
	catchPlanted(t, plant.TxnMarkerBeforeDecision)
}

// A read_committed Fetch that serves open transactions lets two
// consume-transform-produce transactions each read the other's write
// before either commits. Both then commit, so no value read is missing
// from the final read: what catches it is the cycle check (G1c,
// txncheck.go). The test searches the default seeds for a seed whose
// violations include a g1c cycle.
func TestPlantedBugTxnFetchServesOpenMakesG1c(t *testing.T) {
	plant.Reset()
	plant.Set(plant.TxnFetchServesOpen)
	defer plant.Reset()
	const workers = 2
	for first := int64(1); first <= plantedSeedsMax; first += workers {
		results := make([]*Result, workers)
		var wg sync.WaitGroup
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = Run(ChooseOptions(first + int64(i)))
			}()
		}
		wg.Wait()
		for i, res := range results {
			for _, v := range res.Violations {
				if strings.Contains(v, "txn g1c invalid") {
					t.Logf("%s: g1c caught at seed %d: %s", plant.TxnFetchServesOpen, first+int64(i), v)
					return
				}
			}
		}
	}
	t.Fatalf("%s: no g1c cycle in %d seeds", plant.TxnFetchServesOpen, plantedSeedsMax)
}

func TestPlantedBugTxnFetchServesOpen(t *testing.T) { catchPlanted(t, plant.TxnFetchServesOpen) }

// A partition leader that does not verify with a coordinator on another
// broker lets the workload's stray writes (a partition never added) open
// transactions that the commit's markers never close.
func TestPlantedBugTxnVerifySkipped(t *testing.T) { catchPlanted(t, plant.TxnVerifySkipped) }

// An EndTxn v5 that does not bump the producer epoch lets a transaction
// version 2 producer's late write of an aborted transaction open a new
// transaction at the same epoch, which its next commit commits (txn.go,
// lateWrite).
func TestPlantedBugTxnEndNoBump(t *testing.T) { catchPlanted(t, plant.TxnEndNoBump) }

// The marker guard before the transaction version 2 fix: a resent marker
// of the previous transaction voids the add of the next one's first
// batch, which is refused INVALID_TXN_STATE. The TV2 producer carries on
// as franz-go does, and its transaction, kept open by its offsets
// (TxnOffsetCommit v5, txnoffsets.go), commits without the batch: a lost
// write. Without the offsets the refused write was often the
// transaction's only one and nothing was left to commit.
func TestPlantedBugTxnVoidPreviousMarker(t *testing.T) {
	catchPlanted(t, plant.TxnVoidPreviousMarker)
}
