//go:build floe_bugs

package sim

import (
	"testing"

	"github.com/floe-broker/floe/internal/plant"
)

// The share-group planted bugs (issue 18), caught by the share workload's
// checkers (share.go) within plantedSeedsMax seeds.

// A coordinator answers ShareFetch and ShareAcknowledge before the
// share-partition state is committed: after a failover, acquisitions and
// acknowledgements that clients were told about are gone.
func TestPlantedBugShareAckBeforeDurable(t *testing.T) {
	catchPlanted(t, plant.ShareAckBeforeDurable)
}

// The persisted image stores records in flight as archived: after a
// failover they are never redelivered (the skipped checker).
func TestPlantedBugShareInFlightArchived(t *testing.T) {
	catchPlanted(t, plant.ShareInFlightArchived)
}

// A share coordinator archives a dead letter as it sends the copy, not
// once the copy is committed: a copy lost on the way (no leader yet, a
// dropped message, a failover) is never made again (dlq-missing).
func TestPlantedBugShareDLQArchiveBeforeCopy(t *testing.T) {
	catchPlanted(t, plant.ShareDLQArchiveBeforeCopy)
}

// The persisted share-partition image drops what is left of a record's
// redelivery backoff: after a coordinator failover a record released
// with a backoff is handed out again at once (backoff-early).
func TestPlantedBugShareBackoffNotPersisted(t *testing.T) {
	catchPlanted(t, plant.ShareBackoffNotPersisted)
}
