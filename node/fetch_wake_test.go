package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestParkedFetchAnsweredWithTheApply measures how long a parked Fetch
// waits after the high watermark passes its offset (issue 21's "wake-up
// delays of parked fetches"): a fetch parked at the log end (MinBytes 1,
// MaxWait 10 s) on the leader, then an acks=all produce. The high
// watermark moves when the leader applies the batch, which is also when
// the produce is acknowledged; the fetch must be answered in that same
// reactor event (afterApply wakes the parked fetches), at the simulated
// instant of the acknowledgement, with the new batch, for RF 1 and RF 3.
// A wake-up left to a tick, to another pass or to the max wait would
// answer later (the park stage of its trace says how much).
func TestParkedFetchAnsweredWithTheApply(t *testing.T) {
	c := newCluster(t, 3, 59)
	c.waitReady()
	for _, rf := range []int16{1, 3} {
		topic := fmt.Sprintf("wake-rf%d", rf)
		createTopic(t, c, 1, topic, 1, rf, nil)
		waitLeaders(t, c, topic, 1)
		lead := leaderOf(c, topic, 0)
		for i := 0; i < 3; i++ {
			if sp := produce(c, lead, topic, 0, -1, batchOf(fmt.Sprint(i))); sp.ErrorCode != 0 {
				t.Fatalf("%s: produce %d: %v", topic, i, kerr.ErrorForCode(sp.ErrorCode))
			}
		}
		fetch := kmsg.NewPtrFetchRequest()
		fetch.Version, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 11, 10000, 1, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 3, 1<<20, -1
		ft.Partitions = append(ft.Partitions, fp)
		fetch.Topics = append(fetch.Topics, ft)
		trace := &Trace{}
		var fetched *kmsg.FetchResponse
		var fetchedAt, ackedAt time.Duration
		c.nodes[lead].r.HandleRequest(Client{ClientID: "test", Trace: trace}, fetch, func(r kmsg.Response) {
			fetched, fetchedAt = r.(*kmsg.FetchResponse), c.clk.Monotonic()
		})
		c.runFor(100 * time.Millisecond)
		if fetched != nil {
			t.Fatalf("%s: the fetch at the log end was answered at once, not parked", topic)
		}
		var acked *kmsg.ProduceResponse
		c.nodes[lead].r.HandleRequest(Client{ClientID: "test"}, produceReq(topic, 0, -1, batchOf("3")), func(r kmsg.Response) {
			acked, ackedAt = r.(*kmsg.ProduceResponse), c.clk.Monotonic()
		})
		if !c.runUntil(20*time.Second, func() bool { return fetched != nil && acked != nil }) {
			t.Fatalf("%s: fetch answered %v, produce answered %v", topic, fetched != nil, acked != nil)
		}
		if code := acked.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("%s: produce: %v", topic, kerr.ErrorForCode(code))
		}
		sp := fetched.Topics[0].Partitions[0]
		if sp.ErrorCode != 0 || sp.HighWatermark != 4 || len(sp.RecordBatches) == 0 {
			t.Fatalf("%s: the parked fetch got %v, high watermark %d, %d bytes; want the batch at offset 3",
				topic, kerr.ErrorForCode(sp.ErrorCode), sp.HighWatermark, len(sp.RecordBatches))
		}
		if fetchedAt != ackedAt {
			t.Errorf("%s: the parked fetch was answered %v after the acknowledgement (the apply that moved the high watermark), want in the same event",
				topic, fetchedAt-ackedAt)
		}
		if len(trace.Stages) != 1 || trace.Stages[0].Name != StagePark {
			t.Fatalf("%s: fetch stages %+v, want one park", topic, trace.Stages)
		}
		t.Logf("%s: parked %v in all, answered %v after the high watermark moved", topic,
			trace.Stages[0].End.Sub(trace.Stages[0].Start), fetchedAt-ackedAt)
	}
}
