package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// findCoordinator asks node id for a group's coordinator until one is
// known, and returns its node id.
func findCoordinator(t *testing.T, c *cluster, id int32, name string) int32 {
	t.Helper()
	var found int32
	ok := c.runUntil(60*time.Second, func() bool {
		if c.nodes[id].r == nil {
			return false
		}
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version = 4
		req.CoordinatorKeys = []string{name}
		resp := c.request(id, req).(*kmsg.FindCoordinatorResponse)
		co := resp.Coordinators[0]
		if co.ErrorCode != 0 {
			c.runFor(50 * time.Millisecond)
			return false
		}
		found = co.NodeID
		return true
	})
	if !ok {
		t.Fatalf("no coordinator for %s", name)
	}
	return found
}

// groupCall sends a group request to node id, retrying while the
// coordinator is loading or has moved (then it asks where it went).
func groupCall(t *testing.T, c *cluster, id int32, name string, mk func() kmsg.Request, code func(kmsg.Response) int16) (kmsg.Response, int32) {
	t.Helper()
	var resp kmsg.Response
	ask := id // a live broker to ask where the coordinator is
	ok := c.runUntil(60*time.Second, func() bool {
		if c.nodes[id].r == nil { // the metadata still names a dead broker
			c.runFor(100 * time.Millisecond)
			id = findCoordinator(t, c, ask, name)
			return false
		}
		resp = c.request(id, mk())
		switch code(resp) {
		case kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code:
			c.runFor(50 * time.Millisecond)
			return false
		case kerr.NotCoordinator.Code:
			id = findCoordinator(t, c, ask, name)
			return false
		}
		return true
	})
	if !ok {
		t.Fatalf("%s: no answer but retriable errors", kmsg.NameForKey(mk().Key()))
	}
	return resp, id
}

func commitReq(name, member string, gen int32, topic string, p int32, off int64) func() kmsg.Request {
	return func() kmsg.Request {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 8
		req.Group, req.MemberID, req.Generation = name, member, gen
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, off
		rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
		req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
		return req
	}
}

func commitRespCode(r kmsg.Response) int16 {
	return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

func fetchReq(name, topic string, p int32) func() kmsg.Request {
	return func() kmsg.Request {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 8
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = name
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = topic, []int32{p}
		rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{rt}
		req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
		return req
	}
}

func fetchRespCode(r kmsg.Response) int16 { return r.(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode }

func fetchedOffset(r kmsg.Response) int64 {
	return r.(*kmsg.OffsetFetchResponse).Groups[0].Topics[0].Partitions[0].Offset
}

func TestGroupCoordinatorSingleNode(t *testing.T) {
	c := newCluster(t, 1, 11)
	c.waitReady()
	createTopic(t, c, 1, "t", 2, 1, nil)
	waitLeaders(t, c, "t", 2)
	for i := 0; i < 5; i++ {
		produce(c, 1, "t", 0, -1, batchOf(fmt.Sprintf("r%d", i)))
	}
	if id := findCoordinator(t, c, 1, "g"); id != 1 {
		t.Fatalf("coordinator %d", id)
	}
	if topic := c.nodes[1].r.offsetsTopic(); topic == nil || !topic.Internal || topic.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("__consumer_offsets: %+v", topic)
	}

	join := func(member string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = 9
		req.Group, req.MemberID, req.ProtocolType = "g", member, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
		resp, _ := groupCall(t, c, 1, "g", func() kmsg.Request { return req }, func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode })
		return resp.(*kmsg.JoinGroupResponse)
	}
	first := join("")
	if first.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first join: %v", kerr.ErrorForCode(first.ErrorCode))
	}
	j := join(first.MemberID)
	if j.ErrorCode != 0 || j.Generation != 1 || j.LeaderID != first.MemberID {
		t.Fatalf("join: %+v", j)
	}
	sreq := kmsg.NewPtrSyncGroupRequest()
	sreq.Version = 5
	sreq.Group, sreq.MemberID, sreq.Generation = "g", j.MemberID, 1
	sreq.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: j.MemberID, MemberAssignment: []byte("all")}}
	if s := c.request(1, sreq).(*kmsg.SyncGroupResponse); s.ErrorCode != 0 || string(s.MemberAssignment) != "all" {
		t.Fatalf("sync: %+v", s)
	}
	resp, _ := groupCall(t, c, 1, "g", commitReq("g", j.MemberID, 1, "t", 0, 3), commitRespCode)
	if code := commitRespCode(resp); code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	resp, _ = groupCall(t, c, 1, "g", commitReq("g", j.MemberID, 1, "nope", 0, 3), commitRespCode)
	if code := commitRespCode(resp); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("commit to an unknown topic: %v", kerr.ErrorForCode(code))
	}
	lags := c.nodes[1].r.GroupLags()
	if fmt.Sprint(lags) != fmt.Sprint([]GroupLag{{Group: "g", Topic: "t", Partition: 0, Committed: 3, LogEnd: 5, Lag: 2}}) {
		t.Fatalf("lags %+v", lags)
	}

	// Restart the broker: the offsets and the group come back from
	// __consumer_offsets.
	n := c.nodes[1]
	n.crash()
	n.boot()
	c.waitReady()
	resp, _ = groupCall(t, c, 1, "g", fetchReq("g", "t", 0), fetchRespCode)
	if off := fetchedOffset(resp); off != 3 {
		t.Fatalf("offset after restart %d, want 3", off)
	}
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	dreq.Version = 5
	dreq.Groups = []string{"g"}
	d := c.request(1, dreq).(*kmsg.DescribeGroupsResponse).Groups[0]
	if d.State != "Stable" || len(d.Members) != 1 || string(d.Members[0].MemberAssignment) != "all" {
		t.Fatalf("group after restart: %+v", d)
	}
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.Version = 4
	if l := c.request(1, lreq).(*kmsg.ListGroupsResponse); len(l.Groups) != 1 || l.Groups[0].Group != "g" {
		t.Fatalf("list groups: %+v", l.Groups)
	}
}

func TestGroupCoordinatorFailover(t *testing.T) {
	c := newCluster(t, 3, 12)
	c.waitReady()
	createTopic(t, c, 1, "t", 1, 3, nil)
	waitLeaders(t, c, "t", 1)
	co := findCoordinator(t, c, 1, "g")
	if topic := c.nodes[1].r.offsetsTopic(); len(topic.Partitions[0].Replicas) != 3 {
		t.Fatalf("__consumer_offsets replicas %v, want 3", topic.Partitions[0].Replicas)
	}
	resp, co := groupCall(t, c, co, "g", commitReq("g", "", -1, "t", 0, 42), commitRespCode)
	if code := commitRespCode(resp); code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	// The coordinator's broker dies; another broker leads the partition,
	// rebuilds the group from the log and serves the committed offset.
	c.nodes[co].crash()
	other := int32(1)
	if co == 1 {
		other = 2
	}
	resp, co2 := groupCall(t, c, other, "g", fetchReq("g", "t", 0), fetchRespCode)
	if co2 == co {
		t.Fatalf("coordinator did not move off the dead broker %d", co)
	}
	if off := fetchedOffset(resp); off != 42 {
		t.Fatalf("offset after failover %d, want 42", off)
	}
}
