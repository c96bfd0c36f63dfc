package runtime

import (
	"sync"
	"time"

	"github.com/floe-broker/floe/logstore"
)

// disk is the fsync worker. Up to roundsMax rounds run at once (the
// reactor pipelines its rounds, node/ready.go; it completes them in order
// whatever order they are reported in); requests that arrive while
// roundsMax rounds run queue, and the next round takes every queued
// request at once, so syncs that arrive together share fsyncs (group
// commit). The plans of a round run in parallel, up to parallelMax at a
// time: they are different files, and the device overlaps their flushes.
type disk struct {
	post      func(func())
	roundsMax int

	mu      sync.Mutex
	pending []syncReq
	running int // rounds running
	wake    chan struct{}
	quit    chan struct{}
	done    chan struct{}
	rounds  sync.WaitGroup

	syncs     metricsSink
	fsyncsMax int
}

type syncReq struct {
	plans []*logstore.SyncPlan
	done  func(error)
}

// metricsSink receives fsync round latencies.
type metricsSink interface {
	ObserveSync(d time.Duration, plans int)
}

const parallelMax = 8

// newDisk starts a worker that runs one round at a time.
func newDisk(post func(func()), m metricsSink) *disk { return newDiskRounds(post, m, 1) }

// newDiskRounds starts a worker that runs up to roundsMax rounds at once.
func newDiskRounds(post func(func()), m metricsSink, roundsMax int) *disk {
	d := &disk{post: post, roundsMax: max(roundsMax, 1), wake: make(chan struct{}, 1), quit: make(chan struct{}),
		done: make(chan struct{}), syncs: m}
	go d.run()
	return d
}

// Sync implements node.Disk.
func (d *disk) Sync(plans []*logstore.SyncPlan, done func(error)) {
	d.mu.Lock()
	d.pending = append(d.pending, syncReq{plans, done})
	d.mu.Unlock()
	d.kick()
}

func (d *disk) run() {
	defer close(d.done)
	for {
		select {
		case <-d.quit:
			return
		case <-d.wake:
		}
		for {
			d.mu.Lock()
			if d.running >= d.roundsMax || len(d.pending) == 0 {
				d.mu.Unlock()
				break
			}
			reqs := d.pending
			d.pending = nil
			d.running++
			d.mu.Unlock()
			d.rounds.Add(1)
			go func() {
				defer d.rounds.Done()
				d.round(reqs)
				d.mu.Lock()
				d.running--
				d.mu.Unlock()
				d.kick()
			}()
		}
	}
}

// kick wakes the worker (a round ended, or a request arrived).
func (d *disk) kick() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *disk) round(reqs []syncReq) {
	start := time.Now()
	var plans []*logstore.SyncPlan
	for _, r := range reqs {
		plans = append(plans, r.plans...)
	}
	errs := make([]error, len(plans))
	sem := make(chan struct{}, parallelMax)
	var wg sync.WaitGroup
	for i, p := range plans {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			errs[i] = p.Run()
			<-sem
		}()
	}
	wg.Wait()
	if d.syncs != nil {
		d.syncs.ObserveSync(time.Since(start), len(plans))
	}
	// Each request learns the first error among its own plans.
	i := 0
	for _, r := range reqs {
		var err error
		for range r.plans {
			if err == nil {
				err = errs[i]
			}
			i++
		}
		done := r.done
		d.post(func() { done(err) })
	}
}

func (d *disk) stop() {
	close(d.quit)
	<-d.done
	d.rounds.Wait()
}
