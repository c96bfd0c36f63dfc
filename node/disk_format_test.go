package node

import (
	"fmt"
	"time"

	"testing"

	"github.com/floe-broker/floe/logstore"
	"github.com/floe-broker/floe/netx"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// failFromFS fails every mutating operation (Create, Remove, Rename,
// MkdirAll, SyncDir, and a file's Write, Sync, Truncate) from the at-th
// one on, counting from 1, with logstore.ErrNoSpace: a disk that fills up
// at that step. At 0 it fails nothing. ops counts the mutating operations
// it was asked for.
type failFromFS struct {
	logstore.FS
	at, ops int
}

func (f *failFromFS) step(op, name string) error {
	f.ops++
	if f.at > 0 && f.ops >= f.at {
		return fmt.Errorf("%s %s: %w", op, name, logstore.ErrNoSpace)
	}
	return nil
}

func (f *failFromFS) Create(name string) (logstore.File, error) {
	if err := f.step("create", name); err != nil {
		return nil, err
	}
	file, err := f.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &failFromFile{File: file, fs: f, name: name}, nil
}

func (f *failFromFS) Open(name string) (logstore.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &failFromFile{File: file, fs: f, name: name}, nil
}

func (f *failFromFS) Remove(name string) error {
	if err := f.step("remove", name); err != nil {
		return err
	}
	return f.FS.Remove(name)
}

func (f *failFromFS) Rename(oldname, newname string) error {
	if err := f.step("rename", oldname); err != nil {
		return err
	}
	return f.FS.Rename(oldname, newname)
}

func (f *failFromFS) MkdirAll(dir string) error {
	if err := f.step("mkdirall", dir); err != nil {
		return err
	}
	return f.FS.MkdirAll(dir)
}

func (f *failFromFS) SyncDir(dir string) error {
	if err := f.step("syncdir", dir); err != nil {
		return err
	}
	return f.FS.SyncDir(dir)
}

type failFromFile struct {
	logstore.File
	fs   *failFromFS
	name string
}

func (f *failFromFile) Write(p []byte) (int, error) {
	if err := f.fs.step("write", f.name); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *failFromFile) Sync() error {
	if err := f.fs.step("sync", f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *failFromFile) Truncate(size int64) error {
	if err := f.fs.step("truncate", f.name); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

// TestReplacedDiskStartInterruptedAtEachWrite: broker 3's disk is
// replaced, and its first start on the new disk fails at one of its
// writes (the disk fills up there: every write from that step on fails),
// for each of the start's writes in turn: the controller directory, the
// controller's lost-log fence, the disk id, the controller log's files.
// The broker is then crashed (its unsynced writes lost at random) and
// started again on a disk with room. That start must come back with the
// controller replica behind the lost-log fence: it neither votes nor
// campaigns before it has caught up with a leader. Without it, the
// replica, its term and vote forgotten, may vote twice in a term (sim
// seed 1020498 with --all-faults: the start died creating the fence's
// temporary file, after it had created the controller's directory; the
// next start took the directory for a formatted one and opened the
// controller replica unfenced: two controller leaders in term 4). The
// broker's replica of a topic created before the replacement opens
// fenced too, and the cluster takes writes again.
func TestReplacedDiskStartInterruptedAtEachWrite(t *testing.T) {
	c := newCluster(t, 3, 75)
	c.waitReady()
	createTopic(t, c, 1, "old", 1, 3, nil)
	waitLeaders(t, c, "old", 1)
	for i := 0; i < 3; i++ {
		resp := c.request(leaderOf(c, "old", 0), produceReq("old", 0, -1, batchOf("a", "b"))).(*kmsg.ProduceResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce: code %d", code)
		}
	}
	g := uint64(c.nodes[1].r.byName[topicPartition{"old", 0}].Replica().Group)
	c.startMayFail = true
	fsys := &failFromFS{}
	c.wrapFS = func(id int32, inner logstore.FS) logstore.FS {
		if id != 3 {
			return inner
		}
		fsys.FS = inner
		return fsys
	}
	n3 := c.nodes[3]
	// A clean start on a new disk counts the start's writes.
	c.w.ReplaceDisk(netx.NodeID(3))
	if n3.r == nil {
		t.Fatalf("broker 3 did not start on its new disk: %v", n3.startErr)
	}
	writes := fsys.ops
	if writes < 8 {
		t.Fatalf("a start on a new disk made %d writes; the test no longer counts them", writes)
	}
	if f := n3.r.ctl.rep.VoteFence(); !f.IsLostLog() {
		t.Fatalf("the controller replica on a new disk opened with fence %v, want the lost-log fence", f)
	}
	t.Logf("a start on a new disk makes %d writes", writes)
	failed := 0
	for at := 1; at <= writes; at++ {
		n3.crashWith(logstore.CrashLoseAll)
		n3.fs.Wipe()
		fsys.at, fsys.ops = at, 0
		n3.boot()
		if n3.startErr != nil {
			failed++
		}
		n3.crash()
		c.runFor(10 * time.Millisecond)
		fsys.at, fsys.ops = 0, 0
		n3.boot()
		if n3.r == nil {
			t.Fatalf("write %d of %d failed: broker 3 did not start again: %v", at, writes, n3.startErr)
		}
		if f := n3.r.ctl.rep.VoteFence(); !f.IsLostLog() {
			t.Fatalf("the start on a new disk failed at write %d of %d; the next start opened the controller replica with fence %v, want the lost-log fence",
				at, writes, f)
		}
		c.runFor(50 * time.Millisecond)
	}
	t.Logf("%d of the %d interrupted starts failed", failed, writes)
	if failed == 0 {
		t.Fatal("no start failed; the test no longer interrupts the start")
	}
	// The last start's replica of the old topic opens fenced, and the
	// group takes writes.
	var opened bool
	if !c.runUntil(30*time.Second, func() bool {
		p, ok := n3.r.parts[g]
		if ok {
			opened = !p.Replica().LeaderLogFence().IsZero() || !n3.r.local[g].fence.IsZero() || !p.Replica().VoteFence().IsZero()
		}
		return ok
	}) {
		t.Fatal("broker 3 did not open its replica of old-0 on the new disk")
	}
	if !opened {
		t.Fatal("broker 3's replica of a group that predates its disk opened unfenced")
	}
	waitLeaders(t, c, "old", 1)
	resp := c.request(leaderOf(c, "old", 0), produceReq("old", 0, -1, batchOf("c"))).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce after the restarts: code %d", code)
	}
}
