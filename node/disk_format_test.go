package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/floe-broker/floe/consensus"
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
// replaced, and its first start on the new disk is interrupted at one of
// its writes (the disk fills up there: every write from that step on
// fails), for each write in turn from the start's first through the
// opening of its replica of a topic created before the replacement: the
// controller's directory, the controller's lost-log fence, the disk id,
// the controller log's files, the registration's entries, the
// partition's directory and fence. The broker is then crashed (its
// unsynced writes lost at random) and started again on a disk with room.
// That start must come back with the controller replica fenced (it
// neither votes nor campaigns before it has caught up with a leader), and
// its replica of the old topic must open fenced. Without the fence the
// controller replica, its term and vote forgotten, may vote twice in a
// term (sim seed 1020498 with --all-faults: the start died creating the
// fence's temporary file, after it had created the controller's
// directory; the next start took the directory for a formatted one and
// opened the controller replica unfenced: two controller leaders in term
// 4).
func TestReplacedDiskStartInterruptedAtEachWrite(t *testing.T) {
	c := newCluster(t, 3, 75)
	c.waitReady()
	createTopic(t, c, 1, "old", 1, 3, nil)
	waitLeaders(t, c, "old", 1)
	produce := func(v string) {
		t.Helper()
		waitLeaders(t, c, "old", 1)
		resp := c.request(leaderOf(c, "old", 0), produceReq("old", 0, -1, batchOf(v))).(*kmsg.ProduceResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce: code %d", code)
		}
	}
	for i := 0; i < 3; i++ {
		produce("a")
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
	// committed is the highest commit index nodes 1 and 2 hold of the
	// controller group and of old-0.
	committed := func() (ctl, old uint64) {
		for _, id := range []int32{1, 2} {
			if r := c.nodes[id].r; r != nil {
				ctl = max(ctl, r.ctl.rep.Status().Commit)
				if p, ok := r.parts[g]; ok {
					old = max(old, p.Replica().Status().Commit)
				}
			}
		}
		return ctl, old
	}
	// oldOpened runs until broker 3 opens its replica of old-0 and
	// returns the fence it opened with and its log end then.
	oldOpened := func() (opened bool, fence consensus.VoteFence, last uint64) {
		opened = c.runUntilStep(10*time.Second, 100*time.Microsecond, func() bool {
			if n3.r == nil {
				return false
			}
			p, ok := n3.r.parts[g]
			if ok {
				fence, last = n3.r.local[g].openFence, p.Replica().LastIndex()
			}
			return ok
		})
		return opened, fence, last
	}
	// A clean start on a new disk counts the writes.
	c.w.ReplaceDisk(netx.NodeID(3))
	if n3.r == nil {
		t.Fatalf("broker 3 did not start on its new disk: %v", n3.startErr)
	}
	started := fsys.ops
	if f := n3.r.ctl.rep.VoteFence(); !f.IsLostLog() {
		t.Fatalf("the controller replica on a new disk opened with fence %v, want the lost-log fence", f)
	}
	if opened, f, _ := oldOpened(); !opened || !f.IsLostLog() {
		t.Fatalf("broker 3's replica of old-0 on its new disk: opened %v, fence %v, want the lost-log fence", opened, f)
	}
	writes := fsys.ops
	if started < 8 || writes <= started {
		t.Fatalf("a start on a new disk made %d writes, %d through opening old-0; the test no longer counts them", started, writes)
	}
	t.Logf("a start on a new disk makes %d writes, %d through opening old-0 fenced", started, writes)
	failedStarts := 0
	// After each interrupted start, the next start's replicas are fenced,
	// or (the interrupted start got that far) their durable logs already
	// hold every entry committed before the disk was replaced.
	for at := 1; at <= writes; at++ {
		n3.crashWith(logstore.CrashLoseAll)
		n3.fs.Wipe()
		ctlCommit, oldCommit := committed()
		fsys.at, fsys.ops = at, 0
		n3.boot()
		if n3.startErr != nil {
			failedStarts++
		} else {
			c.runFor(time.Second) // up with a full disk
		}
		n3.crash()
		c.runFor(10 * time.Millisecond)
		fsys.at, fsys.ops = 0, 0
		n3.boot()
		if n3.r == nil {
			t.Fatalf("write %d of %d failed: broker 3 did not start again: %v", at, writes, n3.startErr)
		}
		rep := n3.r.ctl.rep
		if f := rep.VoteFence(); f.IsZero() && rep.LastIndex() < ctlCommit {
			t.Fatalf("broker 3's disk filled up at write %d of %d of its start on a new disk; the next start opened the controller replica unfenced, its log ending at %d below the commit index %d",
				at, writes, rep.LastIndex(), ctlCommit)
		}
		opened, f, last := oldOpened()
		if !opened {
			t.Fatalf("write %d of %d failed: broker 3 did not open its replica of old-0 after the next start", at, writes)
		}
		if f.IsZero() && last < oldCommit {
			t.Fatalf("broker 3's disk filled up at write %d of %d of its start on a new disk; the next start opened its replica of old-0 unfenced, its log ending at %d below the commit index %d",
				at, writes, last, oldCommit)
		}
	}
	t.Logf("%d of the %d interrupted starts failed", failedStarts, writes)
	if failedStarts == 0 || failedStarts == writes {
		t.Fatalf("%d of the %d interrupted starts failed; the test no longer interrupts both the start and what follows it", failedStarts, writes)
	}
	produce("c")
}
