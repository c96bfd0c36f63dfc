package node

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/netx"
	"github.com/floe-broker/floe/node/share"
)

func earliestShares(cfg *Config) { cfg.Shares.AutoOffsetReset = "earliest" }

// shareJoin joins member to share group g subscribed to topic, through
// its coordinator (found from node ask), and returns the coordinator.
func shareJoin(t *testing.T, c *cluster, ask int32, g, member, topic string) int32 {
	t.Helper()
	resp, id := groupCall(t, c, ask, g, func() kmsg.Request { return shareHeartbeatReq(g, member, 0, topic) },
		func(r kmsg.Response) int16 { return r.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode })
	if hb := resp.(*kmsg.ShareGroupHeartbeatResponse); hb.ErrorCode != 0 || hb.Assignment == nil {
		t.Fatalf("join %s: %v, assignment %v", member, kerr.ErrorForCode(hb.ErrorCode), hb.Assignment)
	}
	return id
}

func shareFetchOf(c *cluster, topic string, g, member string, epoch int32) *kmsg.ShareFetchRequest {
	f := shareFetchReq(g, member, epoch)
	f.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: c.nodes[firstLive(c)].r.ctl.state.Topics[topic].ID,
		Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}}}
	return f
}

func firstLive(c *cluster) int32 {
	for _, id := range sortedKeys(c.nodes) {
		if c.nodes[id].r != nil {
			return id
		}
	}
	return 0
}

func shareAckOf(c *cluster, topic, g, member string, epoch int32, batches ...kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareAcknowledgeRequest {
	a := shareAckReq(g, member, epoch)
	a.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: c.nodes[firstLive(c)].r.ctl.state.Topics[topic].ID,
		Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0, AcknowledgementBatches: batches}}}}
	return a
}

func ackBatch(first, last int64, t share.AckType) kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch {
	return kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []int8{int8(t)}}
}

// TestShareStateSurvivesFailover: a member acquires ten records on the
// leader of the partition and the group; it accepts 0-3, rejects 4 and
// releases 5; the broker is killed the moment the acknowledgement is
// answered. The broker that takes over the group's coordinator rebuilds
// the share-partition from the Raft log: 0-4 finished, 5-9 available again
// with their delivery counts (redelivered, never skipped).
func TestShareStateSurvivesFailover(t *testing.T) {
	c, lead, g := shareGroupOnLeader(t, 18, 10)
	if co := shareJoin(t, c, lead, g, "a", "q"); co != lead {
		t.Fatalf("group %s coordinated by %d, not %d", g, co, lead)
	}
	f := c.request(lead, shareFetchOf(c, "q", g, "a", 0)).(*kmsg.ShareFetchResponse)
	if f.ErrorCode != 0 || len(f.Topics) != 1 {
		t.Fatalf("share fetch: %v %+v", kerr.ErrorForCode(f.ErrorCode), f.Topics)
	}
	if got := f.Topics[0].Partitions[0].AcquiredRecords; len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 9 || got[0].DeliveryCount != 1 {
		t.Fatalf("acquired %+v, want 0-9 count 1", got)
	}
	ack := c.request(lead, shareAckOf(c, "q", g, "a", 1,
		ackBatch(0, 3, share.AckAccept), ackBatch(4, 4, share.AckReject), ackBatch(5, 5, share.AckRelease))).(*kmsg.ShareAcknowledgeResponse)
	if ack.ErrorCode != 0 || ack.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ack: %v %v", kerr.ErrorForCode(ack.ErrorCode), kerr.ErrorForCode(ack.Topics[0].Partitions[0].ErrorCode))
	}
	c.nodes[lead].crash()

	key := share.Key{Group: g, Topic: "q", Partition: 0}
	var sp *share.Partition
	ok := c.runUntil(60*time.Second, func() bool {
		for _, id := range sortedKeys(c.nodes) {
			if n := c.nodes[id]; n.r != nil {
				if sh, err := n.r.shareShardFor(g); err == nil {
					sp = sh.parts[key]
					return true
				}
			}
		}
		c.runFor(50 * time.Millisecond)
		return false
	})
	if !ok {
		t.Fatalf("no broker took over group %s", g)
	}
	if sp == nil {
		t.Fatalf("the new coordinator has no share state for %v: the fetch and the acks were lost", key)
	}
	// The rejected record waits DeadLettering until the new coordinator
	// knows, with fresh metadata, that the group has no dead-letter
	// topic; then it is archived and the start passes it.
	c.runUntil(10*time.Second, func() bool {
		c.runFor(50 * time.Millisecond)
		return sp.Start() == 5
	})
	if sp.Start() != 5 || sp.End() != 10 {
		t.Fatalf("after failover start %d end %d, want 5 and 10 (0-3 accepted, 4 rejected)", sp.Start(), sp.End())
	}
	for _, r := range sp.InFlight() {
		if r.State != share.Available || r.DeliveryCount != 1 {
			t.Errorf("offset %d after failover: state %d count %d, want available with count 1", r.Offset, r.State, r.DeliveryCount)
		}
	}
}

// TestShareRestartRedeliversInFlight: on one broker, restarted after a
// crash, a member that rejoins gets the records that were in flight again
// (count 2), never the accepted ones.
func TestShareRestartRedeliversInFlight(t *testing.T) {
	if got := acquiredAfterRestart(t); len(got) != 1 || got[0].FirstOffset != 3 || got[0].LastOffset != 5 || got[0].DeliveryCount != 2 {
		t.Fatalf("after restart acquired %+v, want 3-5 with count 2", got)
	}
}

// acquiredAfterRestart: a member acquires 0-5 and accepts 0-2; the broker
// crashes the moment the acknowledgement is answered and restarts; what
// the rejoined member acquires then.
func acquiredAfterRestart(t *testing.T) []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
	c := newClusterWith(t, 1, 7, earliestShares)
	c.waitReady()
	createTopic(t, c, 1, "q", 1, 1, nil)
	waitLeaders(t, c, "q", 1)
	produceValues(t, c, "q", 6)
	shareJoin(t, c, 1, "sg", "a", "q")
	acquireFirst(t, c, 1, "sg", "a", 5)
	if a := c.request(1, shareAckOf(c, "q", "sg", "a", 1, ackBatch(0, 2, share.AckAccept))).(*kmsg.ShareAcknowledgeResponse); a.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ack: %v", kerr.ErrorForCode(a.Topics[0].Partitions[0].ErrorCode))
	}
	c.nodes[1].crash()
	c.nodes[1].boot()
	c.waitReady()
	waitLeaders(t, c, "q", 1)
	shareJoin(t, c, 1, "sg", "a", "q")
	f := c.request(1, shareFetchOf(c, "q", "sg", "a", 0)).(*kmsg.ShareFetchResponse)
	return f.Topics[0].Partitions[0].AcquiredRecords
}

// TestListAndDescribeKnowShareGroups: ListGroups v5 lists a share group
// with type "share" (and filters it by type), DescribeGroups describes it
// with its member, ShareGroupDescribe with its assignment.
func TestListAndDescribeKnowShareGroups(t *testing.T) {
	c := newClusterWith(t, 1, 9, earliestShares)
	c.waitReady()
	createTopic(t, c, 1, "q", 2, 1, nil)
	waitLeaders(t, c, "q", 2)
	createTopic(t, c, 1, "t", 1, 1, nil)
	waitLeaders(t, c, "t", 1)
	shareJoin(t, c, 1, "sg", "m1", "q")
	commitAs(t, c, Client{ClientID: "test"}, "classic-g") // a classic group too (commits on t-0)

	list := func(types ...string) map[string]string {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version, req.TypesFilter = 5, types
		out := map[string]string{}
		for _, g := range c.request(1, req).(*kmsg.ListGroupsResponse).Groups {
			out[g.Group] = g.GroupType + "/" + g.ProtocolType + "/" + g.GroupState
		}
		return out
	}
	if got := list(); got["sg"] != "share/share/Stable" || got["classic-g"] != "classic//Empty" {
		t.Fatalf("ListGroups: %v", got)
	}
	if got := list("Classic"); got["sg"] != "" || got["classic-g"] == "" {
		t.Fatalf("ListGroups of type classic: %v", got)
	}
	if got := list("share"); len(got) != 1 || got["sg"] == "" {
		t.Fatalf("ListGroups of type share: %v", got)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups = 5, []string{"sg"}
	d := c.request(1, dg).(*kmsg.DescribeGroupsResponse).Groups[0]
	if d.ErrorCode != 0 || d.ProtocolType != "share" || d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != "m1" {
		t.Fatalf("DescribeGroups of a share group: %+v", d)
	}
	sd := kmsg.NewPtrShareGroupDescribeRequest()
	sd.GroupIDs = []string{"sg", "nope"}
	sr := c.request(1, sd).(*kmsg.ShareGroupDescribeResponse)
	g := sr.Groups[0]
	if g.ErrorCode != 0 || len(g.Members) != 1 || len(g.Members[0].Assignment.TopicPartitions) != 1 ||
		len(g.Members[0].Assignment.TopicPartitions[0].Partitions) != 2 {
		t.Fatalf("ShareGroupDescribe: %+v", g)
	}
	if sr.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ShareGroupDescribe of an unknown group: %v", kerr.ErrorForCode(sr.Groups[1].ErrorCode))
	}
	// A share group may not take a classic group's name.
	hb := c.request(1, shareHeartbeatReq("classic-g", "m2", 0, "q")).(*kmsg.ShareGroupHeartbeatResponse)
	if hb.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("share join of a classic group's name: %v", kerr.ErrorForCode(hb.ErrorCode))
	}
}

// TestShareExpiredMemberRecordsReleased: a member that stops heartbeating
// is dropped after the share session timeout, and the records it held go
// to another member (count 2) as soon as a metadata barrier confirms the
// group has no backoff (share_backoff.go; the fetch waits up to 1 s for
// them), long before their 30 s lock ends; its late acknowledgement gets
// UNKNOWN_MEMBER_ID and changes nothing.
func TestShareExpiredMemberRecordsReleased(t *testing.T) {
	c := newClusterWith(t, 1, 11, func(cfg *Config) {
		cfg.Shares = ShareConfig{AutoOffsetReset: "earliest", SessionTimeout: 2 * time.Second, Lock: 30 * time.Second}
	})
	c.waitReady()
	createTopic(t, c, 1, "q", 1, 1, nil)
	waitLeaders(t, c, "q", 1)
	produceValues(t, c, "q", 5)
	shareJoin(t, c, 1, "sg", "a", "q")
	acquireFirst(t, c, 1, "sg", "a", 4)
	c.runFor(3 * time.Second)
	shareJoin(t, c, 1, "sg", "b", "q") // b's heartbeat finds a expired
	fb := shareFetchOf(c, "q", "sg", "b", 0)
	fb.MaxWaitMillis = 1000
	f := c.request(1, fb).(*kmsg.ShareFetchResponse)
	if got := f.Topics[0].Partitions[0].AcquiredRecords; len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 4 || got[0].DeliveryCount != 2 {
		t.Fatalf("b acquired %+v, want 0-4 with count 2", got)
	}
	a := c.request(1, shareAckOf(c, "q", "sg", "a", 1, ackBatch(0, 4, share.AckAccept))).(*kmsg.ShareAcknowledgeResponse)
	if a.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("ack by the expired member: %v", kerr.ErrorForCode(a.ErrorCode))
	}
}

// TestShareBackoffSurvivesFailover: a group with a fixed 20 s redelivery
// backoff; a member releases offset 0 and accepts 1, and the coordinator
// is killed the moment that is answered. The broker that takes over must
// keep offset 0 back for the rest of its 20 s (measured in simulated time
// from the release's answer; the delay is restarted from the restore, so
// it may be later, never earlier), then hand it out with delivery count 2.
// Before the backoff was persisted the new coordinator redelivered it at
// once.
func TestShareBackoffSurvivesFailover(t *testing.T) {
	const backoff = 20 * time.Second
	c, lead, g := shareGroupOnLeader(t, 19, 2)
	if res := alterGroupConfigs(c, g, "floe.share.retry.backoff.ms", "20000", "floe.share.retry.backoff.multiplier", "1"); res.ErrorCode != 0 {
		t.Fatalf("alter: %v", kerr.ErrorForCode(res.ErrorCode))
	}
	if co := shareJoin(t, c, lead, g, "a", "q"); co != lead {
		t.Fatalf("group %s coordinated by %d, not %d", g, co, lead)
	}
	f := c.request(lead, shareFetchOf(c, "q", g, "a", 0)).(*kmsg.ShareFetchResponse)
	if got := f.Topics[0].Partitions[0].AcquiredRecords; len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 1 {
		t.Fatalf("acquired %+v, want 0-1", got)
	}
	ack := c.request(lead, shareAckOf(c, "q", g, "a", 1, ackBatch(0, 0, share.AckRelease), ackBatch(1, 1, share.AckAccept))).(*kmsg.ShareAcknowledgeResponse)
	if ack.ErrorCode != 0 || ack.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ack: %+v", ack)
	}
	released := c.clk.Monotonic()
	c.nodes[lead].crash()

	var co int32
	if !c.runUntil(60*time.Second, func() bool {
		c.runFor(50 * time.Millisecond)
		for _, id := range sortedKeys(c.nodes) {
			if n := c.nodes[id]; n.r != nil {
				if _, err := n.r.shareShardFor(g); err == nil {
					co = id
					return true
				}
			}
		}
		return false
	}) {
		t.Fatalf("no broker took over group %s", g)
	}
	if c.clk.Monotonic()-released >= backoff {
		t.Fatalf("the failover took %v, longer than the backoff: nothing to check", c.clk.Monotonic()-released)
	}
	shareJoin(t, c, co, g, "b", "q")
	wantRedeliveredAfter(t, c, shareFetcher(t, c, co, g, "b", 0), released, backoff)
}

// TestShareBackoffConfigSetWhileCoordinatorLags: the group's retry policy
// is set and acknowledged while its coordinator is cut off from the
// controller's leader, so the coordinator's metadata does not have it; a
// record released after that must still back off for the whole policy's
// delay, counted from its release (simulator seed 917170 --corrupt
// --reassign: the coordinator drew the delay from its stale configs, none,
// and redelivered two released records 13-17 ms later). The release
// waits for a metadata barrier (share_backoff.go): nothing is redelivered
// while the coordinator is cut off, and after the heal not before the
// delay.
func TestShareBackoffConfigSetWhileCoordinatorLags(t *testing.T) {
	const backoff = 10 * time.Second
	c, co, ctlLead, g := shareCoordinatorCutOff(t, func(c *cluster) { produceValues(t, c, "q", 1) })
	if res := alterGroupConfigsAt(c, ctlLead, g, "floe.share.retry.backoff.ms", "10000", "floe.share.retry.backoff.multiplier", "1"); res.ErrorCode != 0 {
		t.Fatalf("alter: %v", kerr.ErrorForCode(res.ErrorCode))
	}
	if got := c.nodes[co].r.groupShareConfig(g).Backoff; got.Initial != 0 {
		t.Fatalf("the coordinator already knows the backoff %+v: the test does not lag it", got)
	}
	a := c.request(co, shareAckOf(c, "q", g, "m", 1, ackBatch(0, 0, share.AckRelease))).(*kmsg.ShareAcknowledgeResponse)
	if a.ErrorCode != 0 || a.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("release: %+v", a)
	}
	released := c.clk.Monotonic()
	fetch := shareFetcher(t, c, co, g, "m", 2)
	for i := 0; i < 8; i++ { // cut off: the policy is not known here, so nothing is due
		if got := fetch(); len(got) > 0 {
			t.Fatalf("offset 0 redelivered %v after its release, before the %v backoff set before it: %+v", c.clk.Monotonic()-released, backoff, got)
		}
		c.runFor(250 * time.Millisecond)
	}
	c.w.Heal()
	wantRedeliveredAfter(t, c, fetch, released, backoff)
}

// shareGroupOnLeader sets up the failover tests: a 3-broker cluster
// (seed) with one partition of q holding n records, its leader settled on
// its preferred replica, lead, and a share group g that lead coordinates.
func shareGroupOnLeader(t *testing.T, seed int64, n int) (c *cluster, lead int32, g string) {
	t.Helper()
	c = newClusterWith(t, 3, seed, earliestShares)
	c.waitReady()
	createTopic(t, c, 1, "q", 1, 3, nil)
	waitLeaders(t, c, "q", 1)
	produceValues(t, c, "q", n)
	findCoordinator(t, c, 1, "g")
	c.runFor(10 * time.Second) // leaders settle on their preferred replicas
	lead = leaderOf(c, "q", 0)
	return c, lead, groupLedBy(t, c, lead)
}

// shareCoordinatorCutOff sets up the tests in which a share coordinator's
// metadata lags the controller: a 3-broker cluster with one partition of
// q, its records produced by produce; share group g led by co, a broker
// other than the controller's leader ctlLead, with member m holding
// offset 0. Then co is cut off from ctlLead, so a config the test sets
// through ctlLead is committed by the other two and does not reach co.
func shareCoordinatorCutOff(t *testing.T, produce func(c *cluster)) (c *cluster, co, ctlLead int32, g string) {
	t.Helper()
	c = newClusterWith(t, 3, 47, earliestShares)
	c.waitReady()
	createTopic(t, c, 1, "q", 1, 3, nil)
	waitLeaders(t, c, "q", 1)
	produce(c)
	ctlLead = int32(c.nodes[firstLive(c)].r.controllerLeader())
	for _, id := range sortedKeys(c.nodes) {
		if id != ctlLead {
			co = id
			break
		}
	}
	g = groupLedBy(t, c, co)
	if got := shareJoin(t, c, co, g, "m", "q"); got != co {
		t.Fatalf("group %s coordinated by %d, not %d", g, got, co)
	}
	acquireFirst(t, c, co, g, "m", 0)
	c.w.Cut(netx.NodeID(co), netx.NodeID(ctlLead))
	c.w.Cut(netx.NodeID(ctlLead), netx.NodeID(co))
	return c, co, ctlLead, g
}

// acquireFirst share-fetches q at broker at as member of g, at epoch 0,
// and wants one range of records acquired, ending at last.
func acquireFirst(t *testing.T, c *cluster, at int32, g, member string, last int64) {
	t.Helper()
	f := c.request(at, shareFetchOf(c, "q", g, member, 0)).(*kmsg.ShareFetchResponse)
	if got := f.Topics[0].Partitions[0].AcquiredRecords; len(got) != 1 || got[0].LastOffset != last {
		t.Fatalf("acquired %+v, want one range ending at %d", got, last)
	}
}

// shareFetcher returns a share fetch of q by member of g at broker co,
// from epoch on (each call the next epoch), answering the records it
// acquired.
func shareFetcher(t *testing.T, c *cluster, co int32, g, member string, epoch int32) func() []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
	return func() []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
		t.Helper()
		f := c.request(co, shareFetchOf(c, "q", g, member, epoch)).(*kmsg.ShareFetchResponse)
		if f.ErrorCode != 0 {
			t.Fatalf("share fetch from %d: %v", co, kerr.ErrorForCode(f.ErrorCode))
		}
		epoch++
		return f.Topics[0].Partitions[0].AcquiredRecords
	}
}

// wantRedeliveredAfter fetches every 250 ms (simulated) until offset 0,
// released at released, comes back: not before its backoff ran out,
// alone, with delivery count 2, and within three backoffs.
func wantRedeliveredAfter(t *testing.T, c *cluster, fetch func() []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, released, backoff time.Duration) {
	t.Helper()
	for deadline := released + 3*backoff; ; {
		if got := fetch(); len(got) > 0 {
			if at := c.clk.Monotonic() - released; at < backoff {
				t.Fatalf("offset 0 redelivered %v after its release, before its %v backoff ran out: %+v", at, backoff, got)
			}
			if len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 0 || got[0].DeliveryCount != 2 {
				t.Fatalf("acquired %+v, want offset 0 with delivery count 2", got)
			}
			return
		}
		if c.clk.Monotonic() > deadline {
			t.Fatalf("offset 0 not redelivered within %v of its release", 3*backoff)
		}
		c.runFor(250 * time.Millisecond)
	}
}
