package node

import (
	"testing"
)

// TestReconcileWalksMetadataOncePerChange: a broker opening the replicas
// of a new topic of many partitions, two per round, and reporting their
// leaders as they are elected walks the metadata once per change that may
// move replicas (not once per round of opens, nor once per leader report),
// so the partitions it visits grow with the changes, not with the square
// of the partitions.
func TestReconcileWalksMetadataOncePerChange(t *testing.T) {
	const partitions = 64
	c := newCluster(t, 1, 21)
	c.waitReady()
	before, _ := c.nodes[1].r.Stats()
	createTopic(t, c, 1, "many", partitions, 1, nil)
	waitLeaders(t, c, "many", partitions)
	after, _ := c.nodes[1].r.Stats()
	changes := after.MetadataChanges - before.MetadataChanges
	walks := after.ReconcileWalks - before.ReconcileWalks
	visits := after.ReconcileVisits - before.ReconcileVisits
	t.Logf("changes %d, walks %d, visits %d, open rounds at least %d", changes, walks, visits, partitions/openBatchMax)
	if walks == 0 || walks > changes {
		t.Fatalf("%d walks of the metadata for %d changes", walks, changes)
	}
	total := uint64(0)
	for _, tp := range c.nodes[1].r.Metadata().Topics {
		total += uint64(len(tp.Partitions))
	}
	if visits > walks*total {
		t.Fatalf("%d partitions visited in %d walks of %d partitions", visits, walks, total)
	}
	// Opening the topic takes partitions/openBatchMax rounds and each
	// partition's election a leader report; a walk per round or per
	// report would visit the topic that many times.
	if walks >= partitions/openBatchMax {
		t.Fatalf("%d walks for %d partitions opened %d per round: the rounds walk the metadata", walks, partitions, openBatchMax)
	}
}
