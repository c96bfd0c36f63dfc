package itest

// DescribeLogDirs and DescribeTopicPartitions from real clients: kadm's
// DescribeAllLogDirs over a real socket (the data directory's real path
// and its filesystem's size, from statfs), and DescribeTopicPartitions
// paged by its cursor, encoded and decoded by franz-go.

import (
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDescribeLogDirsAndTopicPartitions(t *testing.T) {
	b, adm := adminBroker(t)
	ctx := ctxFor(t, opWaitMax)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "dirs"); err != nil {
		t.Fatalf("create: %v", err)
	}
	cl := kgoClient(t, b.KafkaAddr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for i := 0; i < 50; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dirs", Partition: 1, Value: make([]byte, 1000)}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}

	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatalf("describe log dirs: %v", err)
	}
	dirs := all[1]
	if len(dirs) != 1 {
		t.Fatalf("broker 1: %d log dirs, want 1", len(dirs))
	}
	want, _ := filepath.Abs(b.DataDir)
	for _, d := range dirs {
		if d.Err != nil || d.Dir != want {
			t.Fatalf("dir %q (err %v), want %q", d.Dir, d.Err, want)
		}
		if d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
			t.Fatalf("total %d usable %d bytes", d.TotalBytes, d.UsableBytes)
		}
		p1, ok := d.Topics.Lookup("dirs", 1)
		p0, ok0 := d.Topics.Lookup("dirs", 0)
		if !ok || !ok0 || p1.Size < 50*1000 || p0.Size >= p1.Size {
			t.Fatalf("dirs-1 %d bytes, dirs-0 %d bytes: want dirs-1 over 50,000 (50 records of 1,000 bytes)", p1.Size, p0.Size)
		}
	}

	// Two pages of two partitions.
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit = 2
	req.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "dirs"}}
	var got []int32
	for page := 0; page < 3; page++ {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("describe topic partitions: %v", err)
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("page %d: %+v", page, resp.Topics)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.LeaderID != 1 || p.ErrorCode != 0 {
				t.Fatalf("dirs-%d: leader %d error %d", p.Partition, p.LeaderID, p.ErrorCode)
			}
			got = append(got, p.Partition)
		}
		if resp.NextCursor == nil {
			break
		}
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	if len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 2 {
		t.Fatalf("partitions over the pages: %v, want [0 1 2]", got)
	}
}
