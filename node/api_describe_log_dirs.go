package node

// DescribeLogDirs (key 35), versions 0-4.
//
// A broker has one log directory, its data directory: every partition
// replica it holds lives there, so the answer is one directory with the
// requested replicas (all when the topic list is null) and, v4+, the size
// and free space of the directory's filesystem (Env.DiskSpace; -1 when the
// runtime cannot tell, as in the simulator). A replica's size is the bytes
// of its log's segments; its offset lag is Kafka's: how far its log end
// is below its own high watermark, which a Raft replica never is (its
// commit index is capped at its log), so 0. There are no future replicas:
// a partition moves between brokers by Raft membership, not between
// directories (AlterReplicaLogDirs is not served). Partitions named that
// this broker holds no replica of are left out, as Kafka does.
//
// Authorization: DESCRIBE on the cluster, else no directories and, v3+,
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func serveDescribeLogDirs(r *Reactor, c Client, kreq kmsg.Request, respond func(kmsg.Response)) {
	req := kreq.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !r.authorize(c, req).cluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode = errClusterAuth.Code
		respond(resp)
		return
	}
	resp.Dirs = []kmsg.DescribeLogDirsResponseDir{r.describeLogDir(req.Topics)}
	respond(resp)
}

// describeLogDir is the data directory with the replicas asked for.
func (r *Reactor) describeLogDir(want []kmsg.DescribeLogDirsRequestTopic) kmsg.DescribeLogDirsResponseDir {
	d := kmsg.NewDescribeLogDirsResponseDir()
	d.Dir, d.TotalBytes, d.UsableBytes = r.cfg.DataDir, -1, -1
	if r.env.DiskSpace != nil {
		dir, total, usable, err := r.env.DiskSpace()
		if dir != "" {
			d.Dir = dir
		}
		if err == nil {
			d.TotalBytes, d.UsableBytes = total, usable
		}
	}
	asked := func(topic string, part int32) bool { return true }
	if want != nil {
		set := map[topicPartition]bool{}
		for _, t := range want {
			for _, p := range t.Partitions {
				set[topicPartition{t.Topic, p}] = true
			}
		}
		asked = func(topic string, part int32) bool { return set[topicPartition{topic, part}] }
	}
	byTopic := map[string]int{}
	for _, g := range sortedKeys(r.parts) {
		p := r.parts[g]
		if !asked(p.Topic, p.Index) {
			continue
		}
		i, ok := byTopic[p.Topic]
		if !ok {
			i = len(d.Topics)
			byTopic[p.Topic] = i
			dt := kmsg.NewDescribeLogDirsResponseDirTopic()
			dt.Topic = p.Topic
			d.Topics = append(d.Topics, dt)
		}
		dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		dp.Partition, dp.Size = p.Index, p.Replica().Stats().SizeBytes
		dp.OffsetLag = max(p.HighWatermark()-p.Replica().NextOffset(), 0)
		d.Topics[i].Partitions = append(d.Topics[i].Partitions, dp)
	}
	return d
}

// expiredDescribeLogDirs is the answer when the request's deadline passes
// (it is answered at once, so only a stalled reactor gets it).
func expiredDescribeLogDirs(q *kmsg.DescribeLogDirsRequest) kmsg.Response {
	resp := q.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	resp.ErrorCode = kerr.RequestTimedOut.Code
	return resp
}
