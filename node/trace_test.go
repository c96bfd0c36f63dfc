package node

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A traced acks=all produce on a 3-node cluster records its stages in the
// order it goes through them, from the simulated clock, all ended by the
// answer: validation, append, the leader's fsync round, the quorum wait.
// A traced fetch that waits records a park exactly as long as its
// MaxWait. The partition's traffic counters count what was produced and
// fetched.
func TestTraceStages(t *testing.T) {
	c := newCluster(t, 3, 7)
	c.waitReady()
	createTopic(t, c, 1, "tr", 1, 3, nil)
	waitLeaders(t, c, "tr", 1)
	lead := leaderOf(c, "tr", 0)

	tr := &Trace{}
	sent := c.clk.Now()
	resp := c.requestAs(lead, Client{ClientID: "test", Trace: tr}, produceReq("tr", 0, -1, batchOf("a", "b", "c")))
	answered := c.clk.Now()
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce: error %d", code)
	}
	want := []string{StageValidate, StageAppend, StageFsync, StageQuorum}
	if len(tr.Stages) != len(want) {
		t.Fatalf("stages %+v, want %v", tr.Stages, want)
	}
	byName := map[string]TraceStage{}
	for i, s := range tr.Stages {
		if s.Name != want[i] || s.Topic != "tr" || s.Partition != 0 {
			t.Errorf("stage %d = %+v, want %s of tr-0", i, s, want[i])
		}
		if s.Start.IsZero() || s.End.Before(s.Start) || s.Start.Before(sent) || s.End.After(answered) {
			t.Errorf("stage %s [%v, %v] is not within the request [%v, %v]", s.Name, s.Start, s.End, sent, answered)
		}
		byName[s.Name] = s
	}
	if byName[StageFsync].Start.Before(byName[StageAppend].End) {
		t.Errorf("the fsync round began before the append")
	}
	if !byName[StageQuorum].End.After(byName[StageQuorum].Start) {
		t.Errorf("a 3-node quorum took no simulated time: %+v", byName[StageQuorum])
	}

	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 11, 500, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "tr"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 3, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	ftr := &Trace{}
	c.requestAs(lead, Client{ClientID: "test", Trace: ftr}, fetch)
	if len(ftr.Stages) != 1 || ftr.Stages[0].Name != StagePark {
		t.Fatalf("fetch stages %+v, want one park", ftr.Stages)
	}
	if park := ftr.Stages[0].End.Sub(ftr.Stages[0].Start); park != 500*time.Millisecond {
		t.Errorf("parked %v, want MaxWait 500ms", park)
	}

	fetch.Topics[0].Partitions[0].FetchOffset = 0
	c.requestAs(lead, Client{ClientID: "test"}, fetch)
	_, ps := c.nodes[lead].r.Stats()
	for _, p := range ps {
		if p.Topic != "tr" {
			continue
		}
		if got := p.Traffic; got.RecordsIn != 3 || got.RecordsOut != 3 || got.BytesIn <= 0 || got.BytesOut != got.BytesIn {
			t.Errorf("traffic %+v, want 3 records in and out, the same bytes", got)
		}
		if p.Replicas != 3 || p.InSync != 3 {
			t.Errorf("replicas %d in sync %d, want 3 and 3", p.Replicas, p.InSync)
		}
	}
	if cs := c.nodes[lead].r.ClusterStats(); cs.Brokers != 3 || cs.Leaderless != 0 {
		t.Errorf("cluster stats %+v, want 3 brokers and no leaderless partition", cs)
	}
}
