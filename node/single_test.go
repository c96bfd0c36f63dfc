package node

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/records"
)

func createTopic(t *testing.T, c *cluster, id int32, name string, partitions int32, rf int16, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp := c.request(id, req).(*kmsg.CreateTopicsResponse)
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
}

// oneBrokerOneTopic starts a one-broker cluster (seed) with topic "t" of
// one partition, led.
func oneBrokerOneTopic(t *testing.T, seed int64) *cluster {
	t.Helper()
	c := newCluster(t, 1, seed)
	c.waitReady()
	createTopic(t, c, 1, "t", 1, 1, nil)
	waitLeaders(t, c, "t", 1)
	return c
}

// waitLeaders runs until every partition of topic has a ready leader.
func waitLeaders(t *testing.T, c *cluster, topic string, partitions int32) {
	t.Helper()
	ok := c.runUntil(30*time.Second, func() bool {
		for p := int32(0); p < partitions; p++ {
			found := false
			for _, n := range c.nodes {
				if n.r == nil {
					continue
				}
				if lp, ok := n.r.byName[topicPartition{topic, p}]; ok && n.r.leaseHeld(lp) {
					found = true
				}
			}
			if !found {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("%s: no ready leader for every partition", topic)
	}
}

func leaderOf(c *cluster, topic string, p int32) int32 {
	for id, n := range c.nodes {
		if n.r == nil {
			continue
		}
		if lp, ok := n.r.byName[topicPartition{topic, p}]; ok && n.r.leaseHeld(lp) {
			return id
		}
	}
	return 0
}

func batchOf(vals ...string) []byte {
	var recs []records.Record
	for _, v := range vals {
		recs = append(recs, records.Record{Key: []byte("k-" + v), Value: []byte(v)})
	}
	return records.Build(records.BuildOptions{BaseTimestamp: 1000}, recs)
}

// produceReq is a Produce v9 of one batch to one partition.
func produceReq(topic string, partition int32, acks int16, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func produce(c *cluster, id int32, topic string, partition int32, acks int16, batch []byte) kmsg.ProduceResponseTopicPartition {
	resp := c.request(id, produceReq(topic, partition, acks, batch))
	if resp == nil {
		return kmsg.ProduceResponseTopicPartition{}
	}
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// fetchAll reads a partition from offset 0 to its high watermark and
// returns the record values in order with their offsets.
func fetchAll(t *testing.T, c *cluster, id int32, topic string, partition int32) (vals []string, offsets []int64) {
	t.Helper()
	return fetchAllAs(t, c, Client{ClientID: "test"}, id, topic, partition)
}

// fetchAllAs is fetchAll from a given client.
func fetchAllAs(t *testing.T, c *cluster, who Client, id int32, topic string, partition int32) (vals []string, offsets []int64) {
	t.Helper()
	return fetchAllFrom(t, c, who, id, topic, partition, 0)
}

// fetchAllFrom is fetchAllAs from offset from.
func fetchAllFrom(t *testing.T, c *cluster, who Client, id int32, topic string, partition int32, from int64) (vals []string, offsets []int64) {
	t.Helper()
	next := from
	for i := 0; i < 1000; i++ {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxBytes, req.MaxWaitMillis = 11, 1<<20, 0
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = partition, next, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		sp := c.requestAs(id, who, req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if sp.ErrorCode != 0 {
			t.Fatalf("fetch %s-%d at %d: %v", topic, partition, next, kerr.ErrorForCode(sp.ErrorCode))
		}
		if len(sp.RecordBatches) == 0 {
			return vals, offsets
		}
		bs, err := records.Split(sp.RecordBatches)
		if err != nil {
			t.Fatalf("fetched bytes do not split: %v", err)
		}
		for _, b := range bs {
			h, err := records.ParseHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			err = records.Records(b, func(r records.Record) error {
				off := h.BaseOffset + int64(r.OffsetDelta)
				if off >= next {
					vals = append(vals, string(r.Value))
					offsets = append(offsets, off)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			next = h.NextOffset()
		}
	}
	t.Fatalf("fetchAll did not finish")
	return nil, nil
}

func TestSingleNodeProduceFetch(t *testing.T) {
	c := newCluster(t, 1, 1)
	c.waitReady()
	createTopic(t, c, 1, "t1", 2, 1, nil)
	waitLeaders(t, c, "t1", 2)

	var want []string
	for i := 0; i < 20; i++ {
		vals := []string{fmt.Sprintf("v%d-a", i), fmt.Sprintf("v%d-b", i)}
		sp := produce(c, 1, "t1", 0, -1, batchOf(vals...))
		if sp.ErrorCode != 0 {
			t.Fatalf("produce %d: %v", i, kerr.ErrorForCode(sp.ErrorCode))
		}
		if sp.BaseOffset != int64(2*i) {
			t.Fatalf("produce %d: base offset %d, want %d", i, sp.BaseOffset, 2*i)
		}
		want = append(want, vals...)
	}
	got, offs := fetchAll(t, c, 1, "t1", 0)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fetched %v\nwant %v", got, want)
	}
	for i, o := range offs {
		if o != int64(i) {
			t.Fatalf("offset %d at position %d", o, i)
		}
	}
	// Partition 1 is untouched.
	if got, _ := fetchAll(t, c, 1, "t1", 1); len(got) != 0 {
		t.Fatalf("partition 1 has %v", got)
	}
}

func TestProduceRejectsCorruptBatchAndKeepsLog(t *testing.T) {
	c := oneBrokerOneTopic(t, 2)
	if sp := produce(c, 1, "t", 0, -1, batchOf("good")); sp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
	}
	bad := batchOf("evil")
	bad[len(bad)-1] ^= 0xff // breaks the CRC
	sp := produce(c, 1, "t", 0, -1, bad)
	if sp.ErrorCode != kerr.CorruptMessage.Code {
		t.Fatalf("corrupt batch: got %v, want CORRUPT_MESSAGE", kerr.ErrorForCode(sp.ErrorCode))
	}
	trunc := batchOf("short")
	sp = produce(c, 1, "t", 0, -1, trunc[:len(trunc)-3])
	if sp.ErrorCode == 0 {
		t.Fatalf("truncated batch accepted")
	}
	got, _ := fetchAll(t, c, 1, "t", 0)
	if fmt.Sprint(got) != "[good]" {
		t.Fatalf("log holds %v after bad batches", got)
	}
}

func TestIdempotentDuplicateGetsOriginalOffset(t *testing.T) {
	c := oneBrokerOneTopic(t, 3)
	mk := func(seq int32, vals ...string) []byte {
		var recs []records.Record
		for _, v := range vals {
			recs = append(recs, records.Record{Value: []byte(v)})
		}
		return records.Build(records.BuildOptions{Producer: &records.Producer{ID: 7, Epoch: 0, BaseSequence: seq}}, recs)
	}
	first := produce(c, 1, "t", 0, -1, mk(0, "a", "b"))
	second := produce(c, 1, "t", 0, -1, mk(2, "c"))
	dup := produce(c, 1, "t", 0, -1, mk(0, "a", "b"))
	if first.ErrorCode != 0 || second.ErrorCode != 0 || dup.ErrorCode != 0 {
		t.Fatalf("errors: %d %d %d", first.ErrorCode, second.ErrorCode, dup.ErrorCode)
	}
	if dup.BaseOffset != first.BaseOffset {
		t.Fatalf("duplicate answered %d, original %d", dup.BaseOffset, first.BaseOffset)
	}
	gap := produce(c, 1, "t", 0, -1, mk(9, "x"))
	if gap.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("sequence gap: %v", kerr.ErrorForCode(gap.ErrorCode))
	}
	got, _ := fetchAll(t, c, 1, "t", 0)
	if fmt.Sprint(got) != "[a b c]" {
		t.Fatalf("log holds %v", got)
	}
}

func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	c := oneBrokerOneTopic(t, 4)
	var acked []string
	for i := 0; i < 30; i++ {
		v := fmt.Sprintf("r%d", i)
		if sp := produce(c, 1, "t", 0, -1, batchOf(v)); sp.ErrorCode == 0 {
			acked = append(acked, v)
		}
	}
	// Writes in flight at the crash: acks=1 answers before the fsync.
	for i := 0; i < 5; i++ {
		produce(c, 1, "t", 0, 1, batchOf(fmt.Sprintf("unsynced%d", i)))
	}
	n := c.nodes[1]
	n.crash()
	n.boot()
	c.waitReady()
	waitLeaders(t, c, "t", 1)
	got, _ := fetchAll(t, c, 1, "t", 0)
	if len(got) < len(acked) {
		t.Fatalf("after crash %d records, %d acknowledged", len(got), len(acked))
	}
	for i, v := range acked {
		if got[i] != v {
			t.Fatalf("record %d is %q, acknowledged %q", i, got[i], v)
		}
	}
}

func TestListOffsets(t *testing.T) {
	c := oneBrokerOneTopic(t, 5)
	for i := 0; i < 4; i++ {
		recs := []records.Record{{Value: []byte("x"), TimestampDelta: 0}, {Value: []byte("y"), TimestampDelta: 5}}
		b := records.Build(records.BuildOptions{BaseTimestamp: int64(1000 * (i + 1))}, recs)
		if sp := produce(c, 1, "t", 0, -1, b); sp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
		}
	}
	list := func(ts int64) (int64, int64) {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = 4
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.CurrentLeaderEpoch = ts, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		sp := c.request(1, req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		if sp.ErrorCode != 0 {
			t.Fatalf("list %d: %v", ts, kerr.ErrorForCode(sp.ErrorCode))
		}
		return sp.Offset, sp.Timestamp
	}
	cases := []struct{ ts, off, recTS int64 }{
		{-2, 0, -1}, {-1, 8, -1}, {0, 0, 1000}, {1000, 0, 1000}, {1003, 1, 1005}, {2000, 2, 2000},
		{2005, 3, 2005}, {4005, 7, 4005}, {4006, -1, -1},
	}
	for _, tc := range cases {
		off, ts := list(tc.ts)
		if off != tc.off || (tc.recTS != -1 && ts != tc.recTS) {
			t.Errorf("ListOffsets(%d) = offset %d ts %d, want %d ts %d", tc.ts, off, ts, tc.off, tc.recTS)
		}
	}
}

func TestMetadataAutoCreates(t *testing.T) {
	c := newCluster(t, 1, 6)
	c.waitReady()
	req := kmsg.NewPtrMetadataRequest()
	req.Version, req.AllowAutoTopicCreation = 9, true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("auto")
	req.Topics = append(req.Topics, rt)
	first := c.request(1, req).(*kmsg.MetadataResponse)
	if first.Topics[0].ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("first metadata: %v", kerr.ErrorForCode(first.Topics[0].ErrorCode))
	}
	waitLeaders(t, c, "auto", 1)
	c.runFor(200 * time.Millisecond)
	second := c.request(1, req).(*kmsg.MetadataResponse)
	mt := second.Topics[0]
	if mt.ErrorCode != 0 || len(mt.Partitions) != 1 || mt.Partitions[0].Leader != 1 {
		t.Fatalf("second metadata: %+v", mt)
	}
	if len(second.Brokers) != 1 || second.Brokers[0].Port != 9001 || second.ControllerID != 1 {
		t.Fatalf("brokers %+v controller %d", second.Brokers, second.ControllerID)
	}
	_ = bytes.Equal
}
