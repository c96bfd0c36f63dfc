package txn

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/node/coord/coordtest"
)

// fakeLog is __transaction_state as the coordinator sees it
// (coordtest.Log), with a look at its committed state.
type fakeLog struct{ coordtest.Log }

// lastState returns the state of id's last committed record (ok false if
// none).
func (l *fakeLog) last(id string) (kmsg.TxnMetadataValue, bool) {
	for i := len(l.Committed) - 1; i >= 0; i-- {
		var k kmsg.TxnMetadataKey
		if k.ReadFrom(l.Committed[i].Key) != nil || k.TransactionalID != id {
			continue
		}
		var v kmsg.TxnMetadataValue
		if v.ReadFrom(l.Committed[i].Value) != nil {
			return v, false
		}
		return v, true
	}
	return kmsg.TxnMetadataValue{}, false
}

// sentMarker is a marker and whether its decision was durable when sent.
type sentMarker struct {
	Marker
	durable bool
}

// fakeMarkers records markers; they succeed at once unless hold or
// failWith is set.
type fakeMarkers struct {
	log      *fakeLog
	hold     bool
	failWith error
	queued   []pendingMarker
	sent     []sentMarker // every marker acknowledged
	tried    []sentMarker // every marker write attempted
	now      *time.Duration
}

type pendingMarker struct {
	m    Marker
	done func(time.Duration, error)
}

func (f *fakeMarkers) Write(m Marker, done func(time.Duration, error)) {
	v, ok := f.log.last(m.TransactionalID)
	want := kmsg.TransactionState(PrepareAbort)
	if m.Commit {
		want = kmsg.TransactionState(PrepareCommit)
	}
	sm := sentMarker{Marker: m, durable: ok && v.State == want && v.ProducerID == m.ProducerID && v.ProducerEpoch == m.ProducerEpoch}
	f.tried = append(f.tried, sm)
	switch {
	case f.failWith != nil:
		done(*f.now, f.failWith)
	case f.hold:
		f.queued = append(f.queued, pendingMarker{m, done})
	default:
		f.sent = append(f.sent, sm)
		done(*f.now, nil)
	}
}

func (f *fakeMarkers) ackAll() {
	for len(f.queued) > 0 {
		q := f.queued[0]
		f.queued = f.queued[1:]
		f.sent = append(f.sent, sentMarker{Marker: q.m, durable: true})
		q.done(*f.now, nil)
	}
}

// fakePIDs hands out 1000, 1001, ...
type fakePIDs struct{ next int64 }

func (f *fakePIDs) Next(done func(int64, error)) {
	f.next++
	done(999+f.next, nil)
}

// harness drives one coordinator with a fake clock, timers, log, markers.
type harness struct {
	t       testing.TB
	now     time.Duration
	timers  *coordtest.Timers
	log     *fakeLog
	markers *fakeMarkers
	pids    *fakePIDs
	cfg     Config
	c       *Coordinator
}

func newHarness(t testing.TB, cfg Config) *harness {
	h := &harness{t: t, cfg: cfg, pids: &fakePIDs{}}
	h.timers = &coordtest.Timers{Now: &h.now}
	h.log = &fakeLog{coordtest.Log{Now: &h.now}}
	h.markers = &fakeMarkers{log: h.log, now: &h.now}
	h.c = New(cfg, h.env())
	h.c.Start(h.now)
	return h
}

func (h *harness) env() Env {
	return Env{Log: h.log, Timers: h.timers, Markers: h.markers, ProducerIDs: h.pids,
		WallMillis: func() int64 { return 1_700_000_000_000 + h.now.Milliseconds() }}
}

// failover closes the coordinator and loads a new one from the committed
// records, as a new leader of the partition would.
func (h *harness) failover() {
	h.c.Close()
	h.log.FailAll(kerr.NotLeaderForPartition)
	h.c = New(h.cfg, h.env())
	for _, r := range h.log.Committed {
		if err := h.c.Replay(r.Key, r.Value); err != nil {
			h.t.Fatalf("replay: %v", err)
		}
	}
	h.c.Start(h.now)
}

// advance moves the clock by d, firing due timers in order.
func (h *harness) advance(d time.Duration) { h.timers.Advance(d) }

type initResult struct {
	pid   int64
	epoch int16
	err   *kerr.Error
	done  bool
}

func (h *harness) init(id string, timeoutMs int32) *initResult {
	return h.initWith(id, timeoutMs, -1, -1)
}

func (h *harness) initWith(id string, timeoutMs int32, pid int64, epoch int16) *initResult {
	r := &initResult{}
	h.c.InitProducerID(id, timeoutMs, pid, epoch, h.now, func(pid int64, epoch int16, err *kerr.Error) {
		*r = initResult{pid, epoch, err, true}
	})
	return r
}

type errResult struct {
	err  *kerr.Error
	done bool
}

func (h *harness) add(id string, pid int64, epoch int16, tps ...TopicPartition) *errResult {
	r := &errResult{}
	h.c.AddPartitions(id, pid, epoch, tps, h.now, func(err *kerr.Error) { *r = errResult{err, true} })
	return r
}

func (h *harness) end(id string, pid int64, epoch int16, commit bool) *errResult {
	r := &errResult{}
	h.c.EndTxn(id, pid, epoch, commit, h.now, func(err *kerr.Error) { *r = errResult{err, true} })
	return r
}

func (h *harness) state(id string) State {
	d, ok := h.c.Describe(id)
	if !ok {
		h.t.Fatalf("%s: not described", id)
	}
	return d.State
}

func (h *harness) mustOK(what string, err *kerr.Error, done bool) {
	h.t.Helper()
	if !done {
		h.t.Fatalf("%s: not answered", what)
	}
	if err != nil {
		h.t.Fatalf("%s: %v", what, err)
	}
}

func tp(topic string, p int32) TopicPartition { return TopicPartition{topic, p} }
