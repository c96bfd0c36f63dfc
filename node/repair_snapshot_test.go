package node

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchFrom fetches partition 0 of topic from offset once.
func fetchFrom(c *cluster, id int32, topic string, offset int64) kmsg.FetchResponseTopicPartition {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxBytes = 11, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = offset, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.request(id, req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
}

// liveSegments lists the segment files of the replica in dir on node id
// that hold entries after snapIndex, lowest first, and how many files
// start at or below it (files retention dropped wait for the next sync to
// be deleted, so they may still be there).
func liveSegments(t *testing.T, c *cluster, id int32, dir string, snapIndex uint64) (live []string, bases []uint64) {
	t.Helper()
	names, err := c.nodes[id].fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !strings.HasSuffix(n, ".log") {
			continue
		}
		base, err := strconv.ParseUint(n[:20], 10, 64)
		if err != nil {
			t.Fatalf("segment name %q: %v", n, err)
		}
		if base > snapIndex {
			live, bases = append(live, n), append(bases, base)
		}
	}
	if len(live) == 0 {
		t.Fatalf("no segment after the snapshot at %d in %v", snapIndex, names)
	}
	return live, bases
}

// TestFetchableDamageAfterRetentionIsRepaired checks a suspected bug
// (docs/testing.md, "Open bugs": checked, not a bug): a consumer fetch
// crossing a damaged header below the Raft snapshot index would mark the
// replica damaged while the repair scans only entries after the snapshot.
// It cannot happen to a partition: its snapshot point is only ever set by
// retention, at the last entry of the segments retention then drops in the
// same step (maintain.go), or installed from the leader (the log is
// emptied), so a partition log holds no entry at or below its snapshot
// index and every entry a fetch can read is one the repair scans. This
// checks both halves: after retention the log's segments start just past
// the snapshot, and a flipped header bit in the first entry a consumer
// can fetch is found by the repair and repaired from the peers.
func TestFetchableDamageAfterRetentionIsRepaired(t *testing.T) {
	c := newCluster(t, 3, 43)
	c.waitReady()
	const topic = "dmg-ret"
	createTopic(t, c, 1, topic, 1, 3, map[string]string{"segment.bytes": "2048", "retention.bytes": "4096"})
	waitLeaders(t, c, topic, 1)
	for i := 0; i < 60; i++ {
		v := fmt.Sprintf("value-%02d-%s", i, strings.Repeat("x", 40))
		for attempt := 0; ; attempt++ {
			lead := leaderOf(c, topic, 0)
			if lead != 0 {
				if sp := produce(c, lead, topic, 0, -1, batchOf(v)); sp.ErrorCode == 0 {
					break
				} else if attempt > 100 {
					t.Fatal(kerr.ErrorForCode(sp.ErrorCode))
				}
			}
			c.runFor(10 * time.Millisecond)
		}
	}
	var victim int32
	if !c.runUntil(20*time.Second, func() bool {
		victim = leaderOf(c, topic, 0)
		return victim != 0 && c.nodes[victim].r.byName[topicPartition{topic, 0}].Replica().Snapshot().Index > 0
	}) {
		t.Fatalf("retention took no snapshot on the leader")
	}
	c.runFor(time.Second) // let retention settle
	victim = leaderOf(c, topic, 0)
	vp := c.nodes[victim].r.byName[topicPartition{topic, 0}]
	rep := vp.Replica()
	snap, start := rep.Snapshot(), rep.StartOffset()
	if snap.Index == 0 || start == 0 {
		t.Fatalf("no retention: snapshot %d, start offset %d", snap.Index, start)
	}
	dir := partitionDir(".", topic, 0, uint64(rep.Group))
	// The log's segments are exactly the files starting after the
	// snapshot, the first just after it: no segment the log still reads
	// holds an entry at or below the snapshot index.
	live, bases := liveSegments(t, c, victim, dir, snap.Index)
	if n := rep.Stats().Segments; n != len(live) || bases[0] != snap.Index+1 {
		t.Fatalf("the log holds %d segments, %d files start after the snapshot at %d (the first at %d): entries at or below the snapshot are still held",
			n, len(live), snap.Index, bases[0])
	}
	name := live[0]
	// Damage the index field of the first entry's header (bytes 16..23).
	if err := c.nodes[victim].fs.FlipBit(path.Join(dir, name), 17, 2); err != nil {
		t.Fatal(err)
	}
	if code := fetchFrom(c, victim, topic, start).ErrorCode; code != kerr.KafkaStorageError.Code {
		t.Fatalf("fetching damaged data at %d answered %v, want KAFKA_STORAGE_ERROR", start, kerr.ErrorForCode(code))
	}
	if !c.runUntil(20*time.Second, func() bool {
		p := c.nodes[victim].r.byName[topicPartition{topic, 0}]
		return p != nil && !p.IsLeader() && c.nodes[victim].r.stats.Repairs > 0 && len(fencesInForce(c.nodes[victim].r)) == 0 &&
			p.HighWatermark() == 60
	}) {
		t.Fatalf("node %d was not repaired (repairs %d)", victim, c.nodes[victim].r.stats.Repairs)
	}
	var lead int32
	if !c.runUntil(10*time.Second, func() bool { lead = leaderOf(c, topic, 0); return lead != 0 }) {
		t.Fatalf("no leader after the repair")
	}
	c.nodes[lead].r.byName[topicPartition{topic, 0}].Replica().TransferLeader(uint64(victim))
	c.nodes[lead].r.queueProcess()
	if !c.runUntil(10*time.Second, func() bool { return leaderOf(c, topic, 0) == victim }) {
		t.Fatalf("leadership did not move back to the repaired node %d", victim)
	}
	from := c.nodes[victim].r.byName[topicPartition{topic, 0}].Replica().StartOffset()
	sp := fetchFrom(c, victim, topic, from)
	if sp.ErrorCode != 0 || len(sp.RecordBatches) == 0 {
		t.Fatalf("the repaired replica answers a fetch at its start offset %d with %v and %d bytes",
			from, kerr.ErrorForCode(sp.ErrorCode), len(sp.RecordBatches))
	}
}
