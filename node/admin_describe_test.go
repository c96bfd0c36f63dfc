package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeTopicPartitions asks broker 1 for the named topics (all when
// none) from the cursor on, at most limit partitions.
func describeTopicPartitions(t *testing.T, c *cluster, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit, req.Cursor = limit, cursor
	for _, name := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	return admin(t, c, 1, req).(*kmsg.DescribeTopicPartitionsResponse)
}

// listed renders an answer as "topic/partition@leader" (or topic:ERROR)
// and its cursor.
func listed(resp *kmsg.DescribeTopicPartitionsResponse) string {
	var out []string
	for _, dt := range resp.Topics {
		if dt.ErrorCode != 0 {
			out = append(out, fmt.Sprintf("%s:%d", *dt.Topic, dt.ErrorCode))
			continue
		}
		for _, dp := range dt.Partitions {
			out = append(out, fmt.Sprintf("%s/%d@%d", *dt.Topic, dp.Partition, dp.LeaderID))
		}
	}
	cur := "end"
	if nc := resp.NextCursor; nc != nil {
		cur = fmt.Sprintf("next %s/%d", nc.Topic, nc.Partition)
	}
	return fmt.Sprintf("%v %s", out, cur)
}

// TestDescribeTopicPartitionsPages walks every topic in pages of 4 and 2
// partitions, as Kafka's admin client does with the cursor, and checks
// the answers for named, unknown and bad requests.
func TestDescribeTopicPartitionsPages(t *testing.T) {
	c := newCluster(t, 1, 75)
	c.waitReady()
	for name, n := range map[string]int32{"c": 1, "a": 3, "b": 2} {
		createTopic(t, c, 1, name, n, 1, nil)
		waitLeaders(t, c, name, n)
	}
	page := describeTopicPartitions(t, c, 4, nil)
	if got, want := listed(page), "[a/0@1 a/1@1 a/2@1 b/0@1] next b/1"; got != want {
		t.Fatalf("first page %s, want %s", got, want)
	}
	cur := &kmsg.DescribeTopicPartitionsRequestCursor{Topic: page.NextCursor.Topic, Partition: page.NextCursor.Partition}
	if got, want := listed(describeTopicPartitions(t, c, 4, cur)), "[b/1@1 c/0@1] end"; got != want {
		t.Fatalf("second page %s, want %s", got, want)
	}
	// A page that ends with a topic: the cursor names the next one.
	if got, want := listed(describeTopicPartitions(t, c, 3, nil)), "[a/0@1 a/1@1 a/2@1] next b/0"; got != want {
		t.Fatalf("page of 3: %s, want %s", got, want)
	}
	a := describeTopicPartitions(t, c, 2000, nil, "a").Topics[0]
	if a.TopicID == ([16]byte{}) || len(a.Partitions[0].Replicas) != 1 || len(a.Partitions[0].EligibleLeaderReplicas) != 1 {
		t.Fatalf("topic a: %+v", a)
	}
	// Named topics come back in name order; an unknown one says so.
	if got, want := listed(describeTopicPartitions(t, c, 2000, nil, "zz", "c", "a")), fmt.Sprintf("[a/0@1 a/1@1 a/2@1 c/0@1 zz:%d] end", kerr.UnknownTopicOrPartition.Code); got != want {
		t.Fatalf("named topics: %s, want %s", got, want)
	}
	bad := fmt.Sprintf("[a:%d] end", kerr.InvalidRequest.Code)
	if got := listed(describeTopicPartitions(t, c, 2000, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "b"}, "a")); got != bad {
		t.Fatalf("cursor outside the named topics: %s, want %s", got, bad)
	}
	if got := listed(describeTopicPartitions(t, c, 0, nil, "a")); got != bad {
		t.Fatalf("partition limit 0: %s, want %s", got, bad)
	}
}

// TestDescribeLogDirs: one directory, the data directory, holding each
// replica with the size of its log; a filter keeps only the partitions
// named that the broker holds.
func TestDescribeLogDirs(t *testing.T) {
	c := newCluster(t, 1, 35)
	c.waitReady()
	createTopic(t, c, 1, "full", 2, 1, nil)
	createTopic(t, c, 1, "empty", 1, 1, nil)
	waitLeaders(t, c, "full", 2)
	waitLeaders(t, c, "empty", 1)
	produceNow(t, c, "full", 20)
	sizes := func(resp *kmsg.DescribeLogDirsResponse) map[string]int64 {
		t.Helper()
		if resp.ErrorCode != 0 || len(resp.Dirs) != 1 || resp.Dirs[0].ErrorCode != 0 {
			t.Fatalf("describe log dirs: %+v", resp)
		}
		d := resp.Dirs[0]
		if d.Dir == "" || d.TotalBytes != -1 || d.UsableBytes != -1 {
			t.Fatalf("dir %q total %d usable %d: want the data dir with unknown sizes (no DiskSpace here)", d.Dir, d.TotalBytes, d.UsableBytes)
		}
		out := map[string]int64{}
		for _, dt := range d.Topics {
			for _, dp := range dt.Partitions {
				if dp.OffsetLag != 0 || dp.IsFuture {
					t.Fatalf("%s-%d: lag %d future %v", dt.Topic, dp.Partition, dp.OffsetLag, dp.IsFuture)
				}
				out[fmt.Sprintf("%s-%d", dt.Topic, dp.Partition)] = dp.Size
			}
		}
		return out
	}
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 4
	all := sizes(admin(t, c, 1, req).(*kmsg.DescribeLogDirsResponse))
	// 20 records of over 100 bytes each went to full-0.
	if all["full-0"] < 20*100 || all["full-0"] <= all["full-1"] {
		t.Fatalf("sizes %v: full-0 holds 20 records of over 100 bytes", all)
	}
	for _, tp := range []string{"full-1", "empty-0"} {
		if _, ok := all[tp]; !ok {
			t.Fatalf("sizes %v: no %s", all, tp)
		}
	}
	req.Topics = []kmsg.DescribeLogDirsRequestTopic{{Topic: "full", Partitions: []int32{1, 7}}, {Topic: "nope", Partitions: []int32{0}}}
	some := sizes(admin(t, c, 1, req).(*kmsg.DescribeLogDirsResponse))
	if len(some) != 1 || some["full-1"] != all["full-1"] {
		t.Fatalf("filtered to full-1 (and an unknown partition and topic): %v", some)
	}
}

// addDescribeAuthCases: DescribeLogDirs needs DESCRIBE on the cluster,
// DescribeTopicPartitions DESCRIBE on each topic, ElectLeaders ALTER on
// the cluster.
func addDescribeAuthCases(cases map[int16]authCase) {
	cases[43] = authCase{needs: []string{"ALLOW ALTER CLUSTER LITERAL kafka-cluster"}, denied: kerr.ClusterAuthorizationFailed,
		req: func() kmsg.Request { return electReq(0, 1000, "t", 0) },
		check: func(t *testing.T, resp kmsg.Response, allowed bool) {
			if got := electCodes(resp); allowed && (len(got) != 1 || got[0] != kerr.ElectionNotNeeded.Code) {
				t.Errorf("alice's ElectLeaders on a one-broker cluster: %v, want ELECTION_NOT_NEEDED", got)
			}
		}}
	cases[35] = authCase{needs: []string{"ALLOW DESCRIBE CLUSTER LITERAL kafka-cluster"}, denied: kerr.ClusterAuthorizationFailed,
		req: func() kmsg.Request {
			d := kmsg.NewPtrDescribeLogDirsRequest()
			d.Version = 4
			return d
		}, check: func(t *testing.T, resp kmsg.Response, allowed bool) {
			if dirs := resp.(*kmsg.DescribeLogDirsResponse).Dirs; allowed != (len(dirs) == 1) {
				t.Errorf("DescribeLogDirs allowed=%v: %d dirs", allowed, len(dirs))
			}
		}}
	cases[75] = authCase{needs: []string{"ALLOW DESCRIBE TOPIC LITERAL t"}, denied: kerr.TopicAuthorizationFailed,
		req: func() kmsg.Request {
			d := kmsg.NewPtrDescribeTopicPartitionsRequest()
			d.ResponsePartitionLimit = 2000
			d.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "t"}}
			return d
		}, check: func(t *testing.T, resp kmsg.Response, allowed bool) {
			dt := resp.(*kmsg.DescribeTopicPartitionsResponse).Topics[0]
			if allowed && (len(dt.Partitions) != 1 || dt.AuthorizedOperations != 1<<kmsg.ACLOperationDescribe) {
				t.Errorf("alice's DescribeTopicPartitions of t: %+v", dt)
			}
			if !allowed && dt.TopicID != ([16]byte{}) {
				t.Errorf("bob was told t's id")
			}
		}}
}

// addDescribeMajorityLossCases: the describes read this broker's memory
// and answer at once; a preferred election cannot move a leader without a
// quorum, so it fails by its timeout (or needs none).
func addDescribeMajorityLossCases(cases map[int16]apiCase, q string) {
	none := requestTimeoutDefault
	cases[43] = apiCase{electReq(0, 60, q, 0), 60 * time.Millisecond, true}
	d := kmsg.NewPtrDescribeLogDirsRequest()
	d.Version = 4
	cases[35] = apiCase{d, none, false}
	p := kmsg.NewPtrDescribeTopicPartitionsRequest()
	p.ResponsePartitionLimit = 2000
	p.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: q}}
	cases[75] = apiCase{p, none, false}
}
