package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/share"
)

func describeShareOffsets(c *cluster, g string) kmsg.DescribeShareGroupOffsetsResponseGroup {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Version = 1
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = g // Topics null: every share-partition of the group
	req.Groups = append(req.Groups, rg)
	return c.request(1, req).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]
}

func alterShareOffset(c *cluster, g, topic string, part int32, off int64) *kmsg.AlterShareGroupOffsetsResponse {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = g
	req.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topic,
		Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: part, StartOffset: off}}}}
	return c.request(1, req).(*kmsg.AlterShareGroupOffsetsResponse)
}

// TestShareGroupOffsetsAdmin: DescribeShareGroupOffsets shows the start
// offset and the lag after a member accepted 0-3 of 10 records; Alter and
// Delete are refused while the group has a member and change nothing;
// once it left, Alter moves the start to 8 (the next member acquires 8-9)
// and Delete forgets the state (described as no partitions); bad offsets
// and unknown topics get their errors.
func TestShareGroupOffsetsAdmin(t *testing.T) {
	c := newClusterWith(t, 1, 21, earliestShares)
	c.waitReady()
	createTopic(t, c, 1, "q", 1, 1, nil)
	waitLeaders(t, c, "q", 1)
	produceValues(t, c, "q", 10)
	shareJoin(t, c, 1, "sg", "a", "q")
	c.request(1, shareFetchOf(c, "q", "sg", "a", 0))
	if a := c.request(1, shareAckOf(c, "q", "sg", "a", 1, ackBatch(0, 3, share.AckAccept))).(*kmsg.ShareAcknowledgeResponse); a.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ack: %v", kerr.ErrorForCode(a.Topics[0].Partitions[0].ErrorCode))
	}
	d := describeShareOffsets(c, "sg")
	if d.ErrorCode != 0 || len(d.Topics) != 1 || len(d.Topics[0].Partitions) != 1 {
		t.Fatalf("describe: %+v", d)
	}
	if p := d.Topics[0].Partitions[0]; p.StartOffset != 4 || p.Lag != 6 || p.ErrorCode != 0 {
		t.Fatalf("describe q-0: start %d lag %d error %v, want 4, 6", p.StartOffset, p.Lag, kerr.ErrorForCode(p.ErrorCode))
	}
	if a := alterShareOffset(c, "sg", "q", 0, 8); a.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("alter with a member: %v", kerr.ErrorForCode(a.ErrorCode))
	}
	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID, del.Topics = "sg", []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "q"}, {Topic: "nope"}}
	if r := c.request(1, del).(*kmsg.DeleteShareGroupOffsetsResponse); r.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with a member: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if p := describeShareOffsets(c, "sg").Topics[0].Partitions[0]; p.StartOffset != 4 {
		t.Fatalf("refused alter or delete changed the start to %d", p.StartOffset)
	}
	if hb := c.request(1, shareHeartbeatReq("sg", "a", -1)).(*kmsg.ShareGroupHeartbeatResponse); hb.ErrorCode != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(hb.ErrorCode))
	}
	a := alterShareOffset(c, "sg", "q", 0, 8)
	if a.ErrorCode != 0 || a.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter: %v %+v", kerr.ErrorForCode(a.ErrorCode), a.Topics)
	}
	if bad := alterShareOffset(c, "sg", "q", 0, -5); bad.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("alter to -5: %v", kerr.ErrorForCode(bad.Topics[0].Partitions[0].ErrorCode))
	}
	if bad := alterShareOffset(c, "sg", "q", 3, 1); bad.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("alter of partition 3: %v", kerr.ErrorForCode(bad.Topics[0].Partitions[0].ErrorCode))
	}
	if p := describeShareOffsets(c, "sg").Topics[0].Partitions[0]; p.StartOffset != 8 || p.Lag != 2 {
		t.Fatalf("after alter: start %d lag %d, want 8, 2", p.StartOffset, p.Lag)
	}
	shareJoin(t, c, 1, "sg", "b", "q")
	f := c.request(1, shareFetchOf(c, "q", "sg", "b", 0)).(*kmsg.ShareFetchResponse)
	if got := f.Topics[0].Partitions[0].AcquiredRecords; len(got) != 1 || got[0].FirstOffset != 8 || got[0].LastOffset != 9 || got[0].DeliveryCount != 1 {
		t.Fatalf("after alter to 8, acquired %+v", got)
	}
	c.request(1, shareHeartbeatReq("sg", "b", -1))
	r := c.request(1, del).(*kmsg.DeleteShareGroupOffsetsResponse)
	if r.ErrorCode != 0 || r.Topics[0].ErrorCode != 0 || r.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("delete: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.Topics)
	}
	if d := describeShareOffsets(c, "sg"); d.ErrorCode != 0 || len(d.Topics) != 0 {
		t.Fatalf("after delete: %+v", d)
	}
	if d := describeShareOffsets(c, "unknown"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe an unknown group: %v", kerr.ErrorForCode(d.ErrorCode))
	}
}
