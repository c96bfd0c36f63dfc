package node

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/node/partition"
	"github.com/floe-broker/floe/node/records"
)

// droppedFiles lists the segment and index files in dir on node id that
// start at or below snapIndex: files of segments retention dropped (a
// partition log holds no entry at or below its snapshot index, maintain.go).
func droppedFiles(t *testing.T, c *cluster, id int32, dir string, snapIndex uint64) []string {
	t.Helper()
	names, err := c.nodes[id].fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var dropped []string
	for _, n := range names {
		if !strings.HasSuffix(n, ".log") && !strings.HasSuffix(n, ".idx") {
			continue
		}
		base, err := strconv.ParseUint(n[:20], 10, 64)
		if err != nil {
			t.Fatalf("segment name %q: %v", n, err)
		}
		if base <= snapIndex {
			dropped = append(dropped, n)
		}
	}
	return dropped
}

// produceStamped produces n records value-00.. to topic's partition 0,
// stamped with the simulated time, each acknowledged before the next.
func produceStamped(t *testing.T, c *cluster, topic string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		b := records.Build(records.BuildOptions{BaseTimestamp: c.clk.Now().UnixMilli()},
			[]records.Record{{Value: []byte(retainedValue(i))}})
		for attempt := 0; ; attempt++ {
			if lead := leaderOf(c, topic, 0); lead != 0 {
				sp := produce(c, lead, topic, 0, -1, b)
				if sp.ErrorCode == 0 {
					break
				}
				if attempt > 100 {
					t.Fatalf("produce %d: %v", i, kerr.ErrorForCode(sp.ErrorCode))
				}
			}
			c.runFor(10 * time.Millisecond)
		}
	}
}

func retainedValue(i int) string { return fmt.Sprintf("value-%02d-%s", i, strings.Repeat("x", 40)) }

// TestIdleRetentionFreesFiles: retention.ms drops the old segments of a
// partition that takes no more writes, and their files leave the disk of
// every replica within a bounded number of ticks. The files may go only
// once the meta record holding the new snapshot point is durable, which
// used to happen only in the partition's next fsync round, that is with
// its next write: an idle partition kept them for ever.
func TestIdleRetentionFreesFiles(t *testing.T) {
	c := newCluster(t, 3, 47)
	c.waitReady()
	const topic = "idle-ret"
	createTopic(t, c, 1, topic, 1, 3, map[string]string{"segment.bytes": "2048", "retention.ms": "2000"})
	waitLeaders(t, c, topic, 1)
	produceStamped(t, c, topic, 60)
	// No more writes. Once the records are older than retention.ms, each
	// replica's next maintenance step drops its sealed segments.
	maintenance := time.Duration(maintenanceTicks) * c.nodes[1].r.cfg.TickInterval
	retained := func(id int32) bool {
		p := c.nodes[id].r.byName[topicPartition{topic, 0}]
		return p != nil && p.Replica().Snapshot().Index > 0 && p.StartOffset() > 0
	}
	if !c.runUntil(2*time.Second+3*maintenance, func() bool { return retained(1) && retained(2) && retained(3) }) {
		t.Fatalf("retention dropped nothing on some replica: %v %v %v", retained(1), retained(2), retained(3))
	}
	// The bound: two more maintenance periods (nothing here waits for a
	// write, so the files go in the fsync rounds right after the drop).
	c.runFor(2 * maintenance)
	for id := int32(1); id <= 3; id++ {
		rep := c.nodes[id].r.byName[topicPartition{topic, 0}].Replica()
		dir := partitionDir(".", topic, 0, uint64(rep.Group))
		snap := rep.Snapshot().Index
		if left := droppedFiles(t, c, id, dir, snap); len(left) > 0 {
			t.Errorf("node %d: %d files of segments dropped at snapshot %d are still on disk %v after the drop: %v",
				id, len(left), snap, 2*maintenance, left)
		}
		if n := len(liveSegmentsOrNone(t, c, id, dir, snap)); n != rep.Stats().Segments {
			t.Errorf("node %d: %d segment files after the snapshot, the log holds %d segments", id, n, rep.Stats().Segments)
		}
	}
}

// liveSegmentsOrNone is liveSegments that allows none.
func liveSegmentsOrNone(t *testing.T, c *cluster, id int32, dir string, snapIndex uint64) []string {
	t.Helper()
	names, err := c.nodes[id].fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	for _, n := range names {
		if base, err := strconv.ParseUint(n[:min(20, len(n))], 10, 64); err == nil && strings.HasSuffix(n, ".log") && base > snapIndex {
			live = append(live, path.Join(dir, n))
		}
	}
	return live
}

// TestRetentionCrashBeforeSyncKeepsLogReadable crashes a broker at points
// between a retention step on an idle partition and the end of the fsync
// rounds it schedules: before the round that writes the new snapshot point
// has run, after it ran (the files removed, the directory not yet synced),
// and after the round that syncs the directory; each with the disk keeping
// all, none or a random part of what was not synced. After the restart the
// log must start either where it started before the drop or where the drop
// moved it, and every record from its start offset to the high watermark
// must be readable: a log whose start points into files already deleted
// would answer the fetch at its start with an error or lose records. Once
// it runs again, retention drops what it must and the files go.
func TestRetentionCrashBeforeSyncKeepsLogReadable(t *testing.T) {
	const topic, n = "crash-ret", 60
	modes := map[string]logstore.CrashMode{"keep-all": logstore.CrashKeepAll, "lose-all": logstore.CrashLoseAll, "random": logstore.CrashRandom}
	step := 100 * time.Microsecond
	sawOld, sawNew := false, false
	for _, mode := range []string{"keep-all", "lose-all", "random"} {
		for _, after := range []int{0, 1, 2, 3, 4, 5, 6, 8, 12, 20} {
			name := fmt.Sprintf("%s crash %d×%v after the drop", mode, after, step)
			c := newCluster(t, 1, 53+int64(after))
			c.waitReady()
			createTopic(t, c, 1, topic, 1, 1, map[string]string{"segment.bytes": "2048", "retention.ms": "2000"})
			waitLeaders(t, c, topic, 1)
			produceStamped(t, c, topic, n)
			part := func() *partition.Partition { return c.nodes[1].r.byName[topicPartition{topic, 0}] }
			// Step finely until the in-memory drop: the round it
			// schedules has started then, its fsyncs not yet finished.
			if !c.runUntilStep(10*time.Second, step, func() bool { return part().Replica().Snapshot().Index > 0 }) {
				t.Fatalf("%s: retention dropped nothing", name)
			}
			newStart := part().StartOffset()
			for i := 0; i < after; i++ {
				c.runFor(step)
			}
			c.nodes[1].crashWith(modes[mode])
			c.nodes[1].boot()
			c.waitReady()
			waitLeaders(t, c, topic, 1)
			if !c.runUntil(10*time.Second, func() bool { return part() != nil && part().HighWatermark() == n }) {
				t.Fatalf("%s: high watermark %d after the restart, want %d", name, part().HighWatermark(), n)
			}
			start := part().StartOffset()
			switch start {
			case 0:
				sawOld = true
			case newStart:
				sawNew = true
			default:
				t.Fatalf("%s: the log starts at %d after the restart: neither 0 nor the dropped-to %d", name, start, newStart)
			}
			vals, offs := fetchAllFrom(t, c, Client{ClientID: "test"}, 1, topic, 0, start)
			if len(vals) != n-int(start) {
				t.Fatalf("%s: %d records readable from the start offset %d, want %d", name, len(vals), start, n-int(start))
			}
			for i, v := range vals {
				if off := offs[i]; off != start+int64(i) || v != retainedValue(int(off)) {
					t.Fatalf("%s: record %d at offset %d is %q, want offset %d %q", name, i, off, v, start+int64(i), retainedValue(int(start)+i))
				}
			}
			// Running again, retention drops what the crash kept, and
			// no dropped file stays behind.
			maintenance := time.Duration(maintenanceTicks) * c.nodes[1].r.cfg.TickInterval
			c.runFor(2 * maintenance)
			rep := part().Replica()
			dir := partitionDir(".", topic, 0, uint64(rep.Group))
			if part().StartOffset() != newStart {
				t.Fatalf("%s: the log starts at %d once retention ran again, want %d", name, part().StartOffset(), newStart)
			}
			if left := droppedFiles(t, c, 1, dir, rep.Snapshot().Index); len(left) > 0 {
				t.Fatalf("%s: files of dropped segments still on disk after the restart: %v", name, left)
			}
		}
	}
	if !sawOld || !sawNew {
		t.Fatalf("the crashes did not cover both outcomes: restarted at the old start %v, at the new one %v", sawOld, sawNew)
	}
}
