//go:build floe_bugs

package node

import (
	"testing"

	"github.com/floe-broker/floe/internal/plant"
)

// The restart check must catch a coordinator that answers a share
// acknowledgement before its state is committed (planted:
// share-ack-before-durable): the broker crashes the moment the answer
// comes, and after the restart the accepted records come back.
func TestShareAckBeforeDurablePlantedBug(t *testing.T) {
	plant.Set(plant.ShareAckBeforeDurable)
	defer plant.Reset()
	got := acquiredAfterRestart(t)
	if len(got) == 1 && got[0].FirstOffset == 3 && got[0].DeliveryCount == 2 {
		t.Fatalf("the planted early acknowledgement went unnoticed: %+v", got)
	}
	t.Logf("caught: after the restart the member acquired %+v (accepted records 0-2 came back)", got)
}
