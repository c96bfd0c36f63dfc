package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
)

// A leader cut off from its followers must stop serving reads before a new
// leader can commit anything: otherwise a consumer reading from it would
// see the high watermark go back.
func TestDeposedLeaderServesNoStaleReads(t *testing.T) {
	c := newCluster(t, 3, 51)
	c.waitReady()
	createTopic(t, c, 1, "ls", 1, 3, nil)
	waitLeaders(t, c, "ls", 1)
	old := leaderOf(c, "ls", 0)
	for i := 0; i < 5; i++ {
		if sp := produce(c, old, "ls", 0, -1, batchOf(fmt.Sprint(i))); sp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
		}
	}
	c.net.Isolate(netx.NodeID(old))
	hwAt := func(id int32) (int64, int16) {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxBytes = 11, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "ls"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		sp := c.request(id, req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		return sp.HighWatermark, sp.ErrorCode
	}
	// Poll the old leader every 10 ms while the others elect a leader and
	// commit more: whenever it answers, its high watermark must not be
	// below what the new leader has committed.
	var newLead int32
	committed := int64(5)
	for step := 0; step < 300; step++ {
		if hw, code := hwAt(old); code == 0 && hw < committed {
			t.Fatalf("step %d: the cut-off leader served high watermark %d after %d was committed elsewhere", step, hw, committed)
		}
		if newLead == 0 {
			for id := int32(1); id <= 3; id++ {
				if id != old && leaderOf(c, "ls", 0) == id {
					newLead = id
				}
			}
		}
		if newLead != 0 {
			if sp := produce(c, newLead, "ls", 0, -1, batchOf(fmt.Sprintf("n%d", step))); sp.ErrorCode == 0 {
				committed = sp.BaseOffset + 1
			}
		}
		c.runFor(10 * time.Millisecond)
	}
	if newLead == 0 || committed <= 5 {
		t.Fatalf("no new leader committed anything (leader %d, hw %d)", newLead, committed)
	}
	if _, code := hwAt(old); code == 0 {
		t.Fatalf("the cut-off leader still serves reads long after losing its lease")
	}
}
