package node

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/clock"
	"github.com/floe-broker/floe/logstore"
)

// scriptedDisk completes each Sync after a latency chosen by the logs it
// syncs (slow for a directory containing slowDir), so a later round can
// finish before an earlier one, and records when each round's plans ran.
type scriptedDisk struct {
	s       clock.Scheduler
	slowDir string
	calls   []*diskCall
}

type diskCall struct {
	dirs []string
	ran  bool
	// overlapped: an earlier call had not run when this one was issued.
	overlapped bool
}

func (d *scriptedDisk) Sync(plans []*logstore.SyncPlan, done func(error)) {
	c := &diskCall{}
	delay := 300 * time.Microsecond
	for _, p := range plans {
		c.dirs = append(c.dirs, p.Dir())
		if d.slowDir != "" && strings.Contains(p.Dir(), d.slowDir) {
			delay = 50 * time.Millisecond
		}
	}
	for _, e := range d.calls {
		c.overlapped = c.overlapped || !e.ran
	}
	d.calls = append(d.calls, c)
	d.s.After(delay, func() {
		var first error
		for _, p := range plans {
			if err := p.Run(); err != nil && first == nil {
				first = err
			}
		}
		c.ran = true
		done(first)
	})
}

// callsNotRun lists the calls issued up to (and including) the last that
// holds dir that have not run yet.
func (d *scriptedDisk) callsNotRun(dir string) (pending int, found bool) {
	last := -1
	for i, c := range d.calls {
		for _, x := range c.dirs {
			if strings.Contains(x, dir) {
				last = i
			}
		}
	}
	for i := 0; i <= last; i++ {
		if !d.calls[i].ran {
			pending++
		}
	}
	return pending, last >= 0
}

// TestPipelinedRoundsCompleteInOrder: a produce to "slow" starts a round
// whose fsync takes 50 ms; a produce to "fast" just after starts a second
// round at once (the pipeline), whose fsync takes 0.3 ms. Neither answer
// may come before its own round and every round started before it have
// run: "fast" is answered after "slow"'s round, although its own finished
// long before (round N+1's completion waits for N's).
func TestPipelinedRoundsCompleteInOrder(t *testing.T) {
	var disk *scriptedDisk
	c := newClusterDisk(t, 1, 1, nil, func(s clock.Scheduler) Disk {
		disk = &scriptedDisk{s: s}
		return disk
	})
	c.waitReady()
	createTopic(t, c, 1, "slow", 1, 1, nil)
	createTopic(t, c, 1, "fast", 1, 1, nil)
	waitLeaders(t, c, "slow", 1)
	waitLeaders(t, c, "fast", 1)
	c.runFor(200 * time.Millisecond)
	disk.slowDir = "slow-0-"
	r := c.nodes[1].r

	type answer struct {
		done     bool
		pending  int // rounds up to its own not yet run at the answer
		found    bool
		errCode  int16
		answered time.Duration
	}
	var slow, fast answer
	ask := func(topic string, a *answer) {
		r.HandleRequest(Client{ClientID: "test"}, produceReq(topic, 0, -1, batchOf("v")), func(resp kmsg.Response) {
			a.done = true
			a.errCode = resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
			a.pending, a.found = disk.callsNotRun(topic + "-0-")
		})
	}
	ask("slow", &slow)
	c.runFor(2 * time.Millisecond) // the slow round is in flight
	ask("fast", &fast)
	if !c.runUntil(5*time.Second, func() bool { return slow.done && fast.done }) {
		t.Fatalf("answers: slow %v, fast %v", slow.done, fast.done)
	}
	for name, a := range map[string]answer{"slow": slow, "fast": fast} {
		if err := kerr.ErrorForCode(a.errCode); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !a.found {
			t.Fatalf("%s: no fsync round synced its log", name)
		}
		if a.pending > 0 {
			t.Fatalf("%s answered with %d rounds up to its own not yet run (acknowledged before its fsync, or before an earlier round's)", name, a.pending)
		}
	}
	overlapped := false
	for _, call := range disk.calls {
		overlapped = overlapped || call.overlapped
	}
	if !overlapped {
		t.Fatal("no round started while another was in flight: the fsync rounds were not pipelined")
	}
}
