package node

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/records"
	"github.com/floe-broker/floe/node/share"
)

// shareOffReplica: 4 brokers; share group sg (dead-letter topic dlq.q)
// coordinated by co, and topic q with one partition of replication factor
// 3 placed on the other three (others), holding records a, b, c; member m
// joined. co holds no replica of q-0.
func shareOffReplica(t *testing.T, seed int64) (c *cluster, co int32, others []int32) {
	t.Helper()
	c = newClusterWith(t, 4, seed, earliestShares)
	c.waitReady()
	co = findCoordinator(t, c, 1, "sg")
	for _, id := range sortedKeys(c.nodes) {
		if id != co {
			others = append(others, id)
		}
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "q", -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, others
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = append(req.Topics, rt)
	if code := c.request(1, req).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create q: %v", kerr.ErrorForCode(code))
	}
	waitLeaders(t, c, "q", 1)
	if res := alterGroupConfigs(c, "sg", dlqTopicConfig, "dlq.q"); res.ErrorCode != 0 {
		t.Fatalf("alter: %v", kerr.ErrorForCode(res.ErrorCode))
	}
	for _, v := range []string{"a", "b", "c"} {
		produceWithHeader(t, c, "q", v)
	}
	if got := shareJoin(t, c, co, "sg", "m", "q"); got != co {
		t.Fatalf("sg coordinated by %d, not %d", got, co)
	}
	if _, local := c.nodes[co].r.byName[topicPartition{"q", 0}]; local {
		t.Fatalf("coordinator %d holds a replica of q-0 (placed on %v)", co, others)
	}
	c.runFor(time.Second) // the coordinator's metadata knows q
	return c, co, others
}

// TestShareCoordinatorWithoutReplica: 4 brokers, topic q with replication
// factor 3 placed on the three brokers that do not coordinate share group
// sg (with a dead-letter topic). The coordinator, holding no replica of
// q-0, reads it from q-0's leader (share_read.go): ShareFetch hands out
// the records a replica would (all three, with their bytes), and a
// rejected record reaches the dead-letter topic with its key, value and
// headers. Before, the coordinator served only partitions it held a
// replica of: ShareFetch answered NOT_LEADER_OR_FOLLOWER, and the dead
// letter waited for ever (docs/testing.md, "Bugs found": seed 171 with
// -join).
func TestShareCoordinatorWithoutReplica(t *testing.T) {
	c, co, others := shareOffReplica(t, 43)
	f := c.request(co, shareFetchOf(c, "q", "sg", "m", 0)).(*kmsg.ShareFetchResponse)
	if f.ErrorCode != 0 || len(f.Topics) != 1 || len(f.Topics[0].Partitions) != 1 {
		t.Fatalf("share fetch: %+v", f)
	}
	p := f.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("share fetch of q-0 from coordinator %d without a replica: %v", co, kerr.ErrorForCode(p.ErrorCode))
	}
	if got := p.AcquiredRecords; len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 2 || got[0].DeliveryCount != 1 {
		t.Fatalf("acquired %+v, want offsets 0-2 with delivery count 1", got)
	}
	want, err := c.nodes[others[0]].r.byName[topicPartition{"q", 0}].Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Records, want) {
		t.Fatalf("share fetch records differ from a replica's (%d bytes, want %d)", len(p.Records), len(want))
	}
	var vals []string
	bs, _ := records.Split(p.Records)
	for _, b := range bs {
		_ = records.Records(b, func(r records.Record) error { vals = append(vals, string(r.Value)); return nil })
	}
	if !slices.Equal(vals, []string{"a", "b", "c"}) {
		t.Fatalf("records %q, want a b c", vals)
	}
	ack := c.request(co, shareAckOf(c, "q", "sg", "m", 1, ackBatch(0, 0, share.AckAccept), ackBatch(1, 1, share.AckReject),
		ackBatch(2, 2, share.AckAccept))).(*kmsg.ShareAcknowledgeResponse)
	if ack.ErrorCode != 0 || ack.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ack: %+v", ack)
	}
	got := waitDLQ(t, c, "dlq.q", 1)
	if len(got) != 1 || string(got[0].Key) != "kb" || string(got[0].Value) != "b" {
		t.Fatalf("dead letters %+v, want record b", got)
	}
	if tr, _ := headerOf(got[0], "trace"); tr != "b" {
		t.Errorf("dead letter lost its own header: %q", tr)
	}
	wantDLQHeaders(t, got[0], "sg", "q", 1, 1, "rejected")
	c.runFor(2 * time.Second)
	sh, kerrV := c.nodes[co].r.shareShardFor("sg")
	if kerrV != nil {
		t.Fatal(kerrV)
	}
	if sp := sh.parts[share.Key{Group: "sg", Topic: "q", Partition: 0}]; sp.Start() != 3 {
		t.Fatalf("share-partition start %d, want 3 (the dead letter archived once copied)", sp.Start())
	}
}

// TestShareCoordinatorWithoutReplicaLeaderUnreachable: the coordinator
// holding no replica of q-0 is cut off from q-0's leader. Its ShareFetch
// read gets no answer: the fetch is answered with no records and no error
// (the client fetches again), and nothing was acquired meanwhile: once
// the link heals the records are handed out with delivery count 1, as if
// the cut fetch had never been.
func TestShareCoordinatorWithoutReplicaLeaderUnreachable(t *testing.T) {
	c, co, _ := shareOffReplica(t, 44)
	lead := leaderOf(c, "q", 0)
	c.w.Cut(netx.NodeID(co), netx.NodeID(lead))
	c.w.Cut(netx.NodeID(lead), netx.NodeID(co))
	f := c.request(co, shareFetchOf(c, "q", "sg", "m", 0)).(*kmsg.ShareFetchResponse)
	if f.ErrorCode != 0 || len(f.Topics) != 1 || len(f.Topics[0].Partitions) != 1 {
		t.Fatalf("share fetch: %+v", f)
	}
	if p := f.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.AcquiredRecords) != 0 || len(p.Records) != 0 {
		t.Fatalf("share fetch with the leader unreachable: %v, acquired %+v", kerr.ErrorForCode(p.ErrorCode), p.AcquiredRecords)
	}
	c.w.Heal()
	var got []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	epoch := int32(1)
	c.runUntil(10*time.Second, func() bool {
		f := c.request(co, shareFetchOf(c, "q", "sg", "m", epoch)).(*kmsg.ShareFetchResponse)
		if f.ErrorCode != 0 {
			t.Fatalf("share fetch after the heal: %v", kerr.ErrorForCode(f.ErrorCode))
		}
		epoch++
		got = f.Topics[0].Partitions[0].AcquiredRecords
		c.runFor(100 * time.Millisecond)
		return len(got) > 0
	})
	if len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 2 || got[0].DeliveryCount != 1 {
		t.Fatalf("acquired %+v after the heal, want offsets 0-2 with delivery count 1", got)
	}
}

// TestShareFetchOnReplacedShardWritesNothing (simulator seed 2500971,
// docs/testing.md "Bugs found"): a ShareFetch that releases records 0-2
// waits for its remote read of q-0 (the coordinator holds no replica and
// is cut off from the leader) on shard A; meanwhile a failed state write
// drops A and the coordinator, still leader in the same term, loads shard
// B from the log, on which the member acquires 0-2 again (delivery count
// 2, committed). When the read times out the old fetch answers: it must
// write nothing. Before the fix A's stale image (0-2 available, count 1)
// was written in the same term, committed over B's, and a later load
// handed 0-2 out with count 2 a second time (share double-delivery).
func TestShareFetchOnReplacedShardWritesNothing(t *testing.T) {
	c, co, _ := shareOffReplica(t, 45)
	k := share.Key{Group: "sg", Topic: "q", Partition: 0}
	f := c.request(co, shareFetchOf(c, "q", "sg", "m", 0)).(*kmsg.ShareFetchResponse)
	if got := f.Topics[0].Partitions[0].AcquiredRecords; len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 2 || got[0].DeliveryCount != 1 {
		t.Fatalf("acquired %+v, want offsets 0-2 with delivery count 1", got)
	}
	r := c.nodes[co].r
	a, errA := r.shareShardFor("sg")
	if errA != nil {
		t.Fatal(errA)
	}
	lead := leaderOf(c, "q", 0)
	c.w.Cut(netx.NodeID(co), netx.NodeID(lead))
	c.w.Cut(netx.NodeID(lead), netx.NodeID(co))
	req := shareFetchOf(c, "q", "sg", "m", 1)
	req.Topics[0].Partitions[0].AcknowledgementBatches = []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{
		{FirstOffset: 0, LastOffset: 2, AcknowledgeTypes: []int8{int8(share.AckRelease)}}}
	var stale *kmsg.ShareFetchResponse
	r.HandleRequest(Client{ClientID: "test"}, req, func(resp kmsg.Response) { stale = resp.(*kmsg.ShareFetchResponse) })
	c.runFor(50 * time.Millisecond)
	if stale != nil {
		t.Fatalf("the fetch answered before its remote read timed out: %+v", stale)
	}
	r.shareWritten(a, kerr.NotLeaderForPartition, func(error) {}) // a failed write drops shard A
	c.w.Heal()
	shareJoin(t, c, co, "sg", "m", "q")
	f = c.request(co, shareFetchOf(c, "q", "sg", "m", 0)).(*kmsg.ShareFetchResponse)
	if got := f.Topics[0].Partitions[0].AcquiredRecords; len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 2 || got[0].DeliveryCount != 2 {
		t.Fatalf("acquired %+v on the reloaded shard, want offsets 0-2 with delivery count 2", got)
	}
	b := r.shares.shards[a.raftGroup]
	if b == nil || b == a || b.term != a.term {
		t.Fatalf("shard not reloaded in the same term (a %p term %d, b %p)", a, a.term, b)
	}
	if stale != nil {
		t.Fatalf("the old fetch answered before the reloaded shard acquired: %+v", stale)
	}
	if !c.runUntil(5*time.Second, func() bool { return stale != nil }) {
		t.Fatal("the old fetch never answered")
	}
	c.runFor(500 * time.Millisecond)
	if p := stale.Topics[0].Partitions[0]; p.AcknowledgeErrorCode == 0 || len(p.AcquiredRecords) != 0 {
		t.Errorf("the fetch on the replaced shard: acknowledgement %v, acquired %+v; want an error and nothing", kerr.ErrorForCode(p.AcknowledgeErrorCode), p.AcquiredRecords)
	}
	// What the log holds: reload once more and read the image.
	r.shareWritten(b, kerr.NotLeaderForPartition, func(error) {})
	sh, errV := r.shareShardFor("sg")
	if errV != nil {
		t.Fatal(errV)
	}
	st := sh.parts[k].State(r.monoNow())
	if len(st.Batches) == 0 || st.Batches[0].First != 0 || st.Batches[0].Count != 2 {
		t.Fatalf("the log's image of q-0 %+v: want offset 0 with delivery count 2 (the replaced shard's image, count 1, written over it)", st)
	}
}
