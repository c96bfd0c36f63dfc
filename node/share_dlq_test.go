package node

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/records"
	"github.com/floe-broker/floe/node/share"
)

// fetchRecordsAll reads a partition from 0 to its high watermark through
// broker id and returns its records (copied) with their offsets.
func fetchRecordsAll(t *testing.T, c *cluster, id int32, topic string, partition int32) ([]records.Record, []int64) {
	t.Helper()
	var out []records.Record
	var offs []int64
	next := int64(0)
	for i := 0; i < 100; i++ {
		sp := fetchPartitionAt(c, id, topic, partition, next)
		if sp.ErrorCode != 0 {
			t.Fatalf("fetch %s-%d at %d: %v", topic, partition, next, kerr.ErrorForCode(sp.ErrorCode))
		}
		if len(sp.RecordBatches) == 0 {
			return out, offs
		}
		bs, err := records.Split(sp.RecordBatches)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			h, err := records.ParseHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			err = records.Records(b, func(r records.Record) error {
				if off := h.BaseOffset + int64(r.OffsetDelta); off >= next {
					rec := records.Record{Key: clone(r.Key), Value: clone(r.Value)}
					for _, hd := range r.Headers {
						rec.Headers = append(rec.Headers, records.RecordHeader{Key: hd.Key, Value: clone(hd.Value)})
					}
					out, offs = append(out, rec), append(offs, off)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			next = h.NextOffset()
		}
	}
	t.Fatal("fetchRecordsAll did not finish")
	return nil, nil
}

func headerOf(r records.Record, key string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// produceWithHeader writes one record with key "k<v>", value v and header
// trace=v to partition 0.
func produceWithHeader(t *testing.T, c *cluster, topic string, v string) {
	t.Helper()
	b := records.Build(records.BuildOptions{BaseTimestamp: 1000}, []records.Record{{Key: []byte("k" + v), Value: []byte(v),
		Headers: []records.RecordHeader{{Key: "trace", Value: []byte(v)}}}})
	if sp := produce(c, leaderOf(c, topic, 0), topic, 0, -1, b); sp.ErrorCode != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
}

// waitDLQ runs the cluster until the dead-letter topic holds n records
// (bounded) and returns them.
func waitDLQ(t *testing.T, c *cluster, topic string, n int) []records.Record {
	t.Helper()
	var got []records.Record
	c.runUntil(30*time.Second, func() bool {
		c.runFor(50 * time.Millisecond)
		st := c.nodes[firstLive(c)].r.ctl.state
		if st.Topics[topic] == nil {
			return false
		}
		lead := leaderOf(c, topic, 0)
		if lead == 0 {
			return false
		}
		if sp := fetchPartitionAt(c, lead, topic, 0, 0); sp.ErrorCode != 0 || sp.HighWatermark < int64(n) {
			return false
		}
		got, _ = fetchRecordsAll(t, c, lead, topic, 0)
		return len(got) >= n
	})
	if len(got) < n {
		t.Fatalf("dead-letter topic %s holds %d records, want %d", topic, len(got), n)
	}
	return got
}

func wantDLQHeaders(t *testing.T, r records.Record, group, topic string, off int64, count int, reason string) {
	t.Helper()
	want := map[string]string{dlqHeaderTopic: topic, dlqHeaderPartition: "0", dlqHeaderOffset: strconv.FormatInt(off, 10),
		dlqHeaderGroup: group, dlqHeaderCount: strconv.Itoa(count), dlqHeaderReason: reason}
	for k, v := range want {
		if got, ok := headerOf(r, k); !ok || got != v {
			t.Errorf("dead letter of offset %d: header %s = %q, want %q", off, k, got, v)
		}
	}
	if ts, ok := headerOf(r, dlqHeaderTime); !ok || ts == "" {
		t.Errorf("dead letter of offset %d: no %s header", off, dlqHeaderTime)
	}
}

// TestShareDeadLetterRejectAndLimit: a group with a dead-letter topic
// (missing: created) and a delivery limit of 2. A member rejects offset 0,
// releases offset 1 twice (the limit) and accepts offset 2. The dead-letter
// topic gets 0 (reason rejected, count 1) and 1 (delivery-limit, count 2),
// each with the original key, value and header and the origin headers,
// and nothing else; the share-partition's start moves past all three only
// once the copies are committed.
func TestShareDeadLetterRejectAndLimit(t *testing.T) {
	c := newClusterWith(t, 1, 41, earliestShares)
	c.waitReady()
	createTopic(t, c, 1, "q", 1, 1, nil)
	waitLeaders(t, c, "q", 1)
	for _, bad := range []string{"__consumer_offsets", "a/b", ""} {
		if res := alterGroupConfigs(c, "sg", dlqTopicConfig, bad); bad != "" && res.ErrorCode != kerr.InvalidConfig.Code {
			t.Fatalf("dead-letter topic %q: %v", bad, kerr.ErrorForCode(res.ErrorCode))
		}
	}
	if res := alterGroupConfigs(c, "sg", dlqTopicConfig, "dlq.q", "share.delivery.count.limit", "2"); res.ErrorCode != 0 {
		t.Fatalf("alter: %v", kerr.ErrorForCode(res.ErrorCode))
	}
	for _, v := range []string{"a", "b", "c"} {
		produceWithHeader(t, c, "q", v)
	}
	shareJoin(t, c, 1, "sg", "m", "q")
	acquireFirst(t, c, 1, "sg", "m", 2)
	ack := c.request(1, shareAckOf(c, "q", "sg", "m", 1, ackBatch(0, 0, share.AckReject), ackBatch(1, 1, share.AckRelease),
		ackBatch(2, 2, share.AckAccept))).(*kmsg.ShareAcknowledgeResponse)
	if ack.ErrorCode != 0 || ack.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ack: %+v", ack)
	}
	f := c.request(1, shareFetchOf(c, "q", "sg", "m", 2)).(*kmsg.ShareFetchResponse)
	if got := f.Topics[0].Partitions[0].AcquiredRecords; len(got) != 1 || got[0].FirstOffset != 1 || got[0].LastOffset != 1 || got[0].DeliveryCount != 2 {
		t.Fatalf("second fetch acquired %+v, want offset 1 with count 2", got)
	}
	ack = c.request(1, shareAckOf(c, "q", "sg", "m", 3, ackBatch(1, 1, share.AckRelease))).(*kmsg.ShareAcknowledgeResponse)
	if ack.ErrorCode != 0 || ack.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("second ack: %+v", ack)
	}
	got := waitDLQ(t, c, "dlq.q", 2)
	c.runFor(2 * time.Second) // room for a wrong extra copy
	got, _ = fetchRecordsAll(t, c, leaderOf(c, "dlq.q", 0), "dlq.q", 0)
	if len(got) != 2 {
		t.Fatalf("dead-letter topic holds %d records, want 2", len(got))
	}
	for i, want := range []struct {
		v      string
		count  int
		reason string
	}{{"a", 1, "rejected"}, {"b", 2, "delivery-limit"}} {
		r := got[i]
		if string(r.Key) != "k"+want.v || string(r.Value) != want.v {
			t.Errorf("dead letter %d: key %q value %q", i, r.Key, r.Value)
		}
		if tr, _ := headerOf(r, "trace"); tr != want.v {
			t.Errorf("dead letter %d lost its own header: %q", i, tr)
		}
		wantDLQHeaders(t, r, "sg", "q", int64(i), want.count, want.reason)
	}
	sh, err := c.nodes[1].r.shareShardFor("sg")
	if err != nil {
		t.Fatal(err)
	}
	if sp := sh.parts[share.Key{Group: "sg", Topic: "q", Partition: 0}]; sp.Start() != 3 || sp.DeadLetterProducer().Seq != 2 {
		t.Fatalf("share-partition start %d producer %+v, want start 3 and 2 copies", sp.Start(), sp.DeadLetterProducer())
	}
	want := []ShareGroupStats{{Group: "sg", Acquired: 4, Redelivered: 1, Acks: [5]uint64{0, 1, 2, 1, 0}, DeadLettered: 2}}
	if got := c.nodes[1].r.ShareStats(); !reflect.DeepEqual(got, want) {
		t.Fatalf("share stats\n got %+v\nwant %+v", got, want)
	}
}

// TestShareDeadLetterAcrossFailover: on 3 brokers, a member rejects a
// record and the group's coordinator is killed the moment the rejection
// is answered, before or after its copy. The broker that takes over the
// group copies the record (the rejection was durable as DeadLettering),
// and the dead-letter topic holds it exactly once: a copy sent again
// carries the persisted producer id and sequence.
func TestShareDeadLetterAcrossFailover(t *testing.T) {
	c := newClusterWith(t, 3, 42, earliestShares)
	c.waitReady()
	createTopic(t, c, 1, "q", 1, 3, nil)
	createTopic(t, c, 1, "dlq.q", 1, 3, map[string]string{dlqEnableConfig: "true"})
	waitLeaders(t, c, "q", 1)
	waitLeaders(t, c, "dlq.q", 1)
	findCoordinator(t, c, 1, "g")
	c.runFor(10 * time.Second)
	lead := leaderOf(c, "q", 0)
	g := groupLedBy(t, c, lead)
	if res := alterGroupConfigs(c, g, dlqTopicConfig, "dlq.q"); res.ErrorCode != 0 {
		t.Fatalf("alter: %v", kerr.ErrorForCode(res.ErrorCode))
	}
	for _, v := range []string{"a", "b"} {
		produceWithHeader(t, c, "q", v)
	}
	if co := shareJoin(t, c, lead, g, "m", "q"); co != lead {
		t.Fatalf("group %s coordinated by %d, not %d", g, co, lead)
	}
	// A first rejection, copied before the crash: the producer id is
	// taken and persisted.
	acquireFirst(t, c, lead, g, "m", 1)
	if a := c.request(lead, shareAckOf(c, "q", g, "m", 1, ackBatch(0, 0, share.AckReject))).(*kmsg.ShareAcknowledgeResponse); a.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ack: %+v", a)
	}
	waitDLQ(t, c, "dlq.q", 1)
	// The second: the coordinator dies as soon as it is answered.
	if a := c.request(lead, shareAckOf(c, "q", g, "m", 2, ackBatch(1, 1, share.AckReject))).(*kmsg.ShareAcknowledgeResponse); a.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ack: %+v", a)
	}
	c.nodes[lead].crash()
	got := waitDLQ(t, c, "dlq.q", 2)
	c.runFor(3 * time.Second)
	got, _ = fetchRecordsAll(t, c, leaderOf(c, "dlq.q", 0), "dlq.q", 0)
	if len(got) != 2 {
		t.Fatalf("dead-letter topic holds %d records after the failover, want 2 (each once)", len(got))
	}
	for i, r := range got {
		wantDLQHeaders(t, r, g, "q", int64(i), 1, "rejected")
	}
	// The new coordinator archived it.
	ok := c.runUntil(30*time.Second, func() bool {
		c.runFor(50 * time.Millisecond)
		for _, id := range sortedKeys(c.nodes) {
			if n := c.nodes[id]; n.r != nil {
				if sh, err := n.r.shareShardFor(g); err == nil {
					sp := sh.parts[share.Key{Group: g, Topic: "q", Partition: 0}]
					return sp != nil && sp.Start() == 2
				}
			}
		}
		return false
	})
	if !ok {
		t.Fatal("the new coordinator did not archive the dead letter")
	}
}

// TestShareDeadLetterWaitsForMetadata: a coordinator that loads a group's
// share state applies the group's configs to it (a record left available
// at the delivery limit is dead-lettered, or archived when the group has
// no dead-letter topic). A broker just started may not have applied the
// dead-letter config yet; loading then would archive the record uncopied
// (simulator seed 910114 --corrupt --reassign). So the load waits
// (COORDINATOR_LOAD_IN_PROGRESS) until the metadata has caught up, and the
// record reaches the dead-letter topic.
func TestShareDeadLetterWaitsForMetadata(t *testing.T) {
	c := newClusterWith(t, 1, 43, earliestShares)
	c.waitReady()
	createTopic(t, c, 1, "q", 1, 1, nil)
	waitLeaders(t, c, "q", 1)
	if res := alterGroupConfigs(c, "sg", dlqTopicConfig, "dlq.q", "share.delivery.count.limit", "2"); res.ErrorCode != 0 {
		t.Fatalf("alter: %v", kerr.ErrorForCode(res.ErrorCode))
	}
	produceWithHeader(t, c, "q", "a")
	shareJoin(t, c, 1, "sg", "m", "q")
	acquireFirst(t, c, 1, "sg", "m", 0)
	if a := c.request(1, shareAckOf(c, "q", "sg", "m", 1, ackBatch(0, 0, share.AckRelease))).(*kmsg.ShareAcknowledgeResponse); a.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ack: %+v", a)
	}
	f := c.request(1, shareFetchOf(c, "q", "sg", "m", 2)).(*kmsg.ShareFetchResponse)
	if got := f.Topics[0].Partitions[0].AcquiredRecords; len(got) != 1 || got[0].DeliveryCount != 2 {
		t.Fatalf("second fetch acquired %+v, want offset 0 with count 2", got)
	}
	c.runFor(100 * time.Millisecond) // the state write: offset 0 stored available at count 2
	// The broker as just restarted behind the config change: no share
	// state loaded, metadata not caught up, the dead-letter topic not yet
	// in the group's configs.
	r := c.nodes[1].r
	r.shares.shards = nil
	r.catchUp.done = false
	set := r.ctl.state.GroupConfigs["sg"]
	r.ctl.state.GroupConfigs["sg"] = map[string]string{"share.delivery.count.limit": "2"}
	_, err := r.shareShardFor("sg")
	r.ctl.state.GroupConfigs["sg"] = set
	r.catchUp.done = true
	if err != kerr.CoordinatorLoadInProgress {
		t.Errorf("loading share state with lagging metadata: %v, want COORDINATOR_LOAD_IN_PROGRESS", err)
	}
	got := waitDLQ(t, c, "dlq.q", 1)
	wantDLQHeaders(t, got[0], "sg", "q", 0, 2, "delivery-limit")
}

// A dead-letter topic set (and acknowledged by the controller) just before
// a record is rejected must get that record, even when the group's
// coordinator has not applied the config yet: it is cut off from the
// controller's leader here, so its metadata lags. The coordinator must
// not archive the record uncopied on its stale configs; it waits for a
// metadata barrier (metabarrier.go), which passes only once it applied the
// config, and then copies. Simulator seed 910380 with --corrupt
// --reassign lost two dead letters this way.
func TestShareDeadLetterConfigSetWhileCoordinatorLags(t *testing.T) {
	c, co, ctlLead, g := shareCoordinatorCutOff(t, func(c *cluster) { produceWithHeader(t, c, "q", "a") })
	// The dead-letter topic is set through the controller's leader:
	// committed by the other two.
	if res := alterGroupConfigsAt(c, ctlLead, g, dlqTopicConfig, "dlq.q"); res.ErrorCode != 0 {
		t.Fatalf("alter: %v", kerr.ErrorForCode(res.ErrorCode))
	}
	if got := c.nodes[co].r.groupShareConfig(g).DeadLetterTopic; got != "" {
		t.Fatalf("the coordinator already knows the dead-letter topic %q: the test does not lag it", got)
	}
	a := c.request(co, shareAckOf(c, "q", g, "m", 1, ackBatch(0, 0, share.AckReject))).(*kmsg.ShareAcknowledgeResponse)
	if a.ErrorCode != 0 || a.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("reject: %+v", a)
	}
	c.runFor(2 * time.Second) // the coordinator, still cut off, must not archive it
	sh, err := c.nodes[co].r.shareShardFor(g)
	if err != nil {
		t.Fatalf("share shard: %v", err)
	}
	if sp := sh.parts[share.Key{Group: g, Topic: "q", Partition: 0}]; sp == nil || sp.Start() != 0 {
		t.Fatalf("the rejected record was archived while the coordinator's metadata lagged the dead-letter config")
	}
	c.w.Heal()
	got := waitDLQ(t, c, "dlq.q", 1)
	wantDLQHeaders(t, got[0], g, "q", 0, 1, "rejected")
}

// TestShareDeadLetterCopyRecordEnable: KIP-1191's group config
// errors.deadletterqueue.copy.record.enable. Set false, a rejected
// record's dead-letter record has the __dlq.errors.* headers only: a null
// key and value, none of the record's own headers. Set true (Floe's
// default), the next one carries the record's key, value and header too.
// A value that is not a boolean is INVALID_CONFIG and changes nothing.
func TestShareDeadLetterCopyRecordEnable(t *testing.T) {
	c := newClusterWith(t, 1, 43, earliestShares)
	c.waitReady()
	createTopic(t, c, 1, "q", 1, 1, nil)
	waitLeaders(t, c, "q", 1)
	if res := alterGroupConfigs(c, "sg", dlqCopyConfig, "maybe"); res.ErrorCode != kerr.InvalidConfig.Code {
		t.Fatalf("%s=maybe: %v", dlqCopyConfig, kerr.ErrorForCode(res.ErrorCode))
	}
	if got := c.nodes[1].r.groupShareConfig("sg"); got.DeadLetterNoCopy {
		t.Fatalf("the default is not to copy the record, or a refused value was applied: %+v", got)
	}
	if res := alterGroupConfigs(c, "sg", dlqTopicConfig, "dlq.q", dlqCopyConfig, "FALSE"); res.ErrorCode != 0 {
		t.Fatalf("alter: %v", kerr.ErrorForCode(res.ErrorCode))
	}
	for _, v := range []string{"a", "b"} {
		produceWithHeader(t, c, "q", v)
	}
	shareJoin(t, c, 1, "sg", "m", "q")
	acquireFirst(t, c, 1, "sg", "m", 1)
	ack := c.request(1, shareAckOf(c, "q", "sg", "m", 1, ackBatch(0, 0, share.AckReject))).(*kmsg.ShareAcknowledgeResponse)
	if ack.ErrorCode != 0 || ack.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("reject 0: %+v", ack)
	}
	got := waitDLQ(t, c, "dlq.q", 1)
	wantDLQHeaders(t, got[0], "sg", "q", 0, 1, "rejected")
	if got[0].Key != nil || got[0].Value != nil {
		t.Errorf("copy.record.enable=false: dead letter has key %q value %q, want null", got[0].Key, got[0].Value)
	}
	for _, h := range got[0].Headers {
		if len(h.Key) < len("__dlq.errors.") || h.Key[:len("__dlq.errors.")] != "__dlq.errors." {
			t.Errorf("copy.record.enable=false: dead letter carries the record's header %s", h.Key)
		}
	}
	if res := alterGroupConfigs(c, "sg", dlqCopyConfig, "true"); res.ErrorCode != 0 {
		t.Fatalf("alter: %v", kerr.ErrorForCode(res.ErrorCode))
	}
	ack = c.request(1, shareAckOf(c, "q", "sg", "m", 2, ackBatch(1, 1, share.AckReject))).(*kmsg.ShareAcknowledgeResponse)
	if ack.ErrorCode != 0 || ack.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("reject 1: %+v", ack)
	}
	got = waitDLQ(t, c, "dlq.q", 2)
	wantDLQHeaders(t, got[1], "sg", "q", 1, 1, "rejected")
	if string(got[1].Key) != "kb" || string(got[1].Value) != "b" {
		t.Errorf("copy.record.enable=true: dead letter key %q value %q, want kb b", got[1].Key, got[1].Value)
	}
	if tr, _ := headerOf(got[1], "trace"); tr != "b" {
		t.Errorf("copy.record.enable=true: dead letter lost the record's header: %q", tr)
	}
}
