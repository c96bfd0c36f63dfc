package txn

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"pgregory.net/rapid"
)

// model is the naive coordinator the property test compares with: every
// write commits and every marker lands at once, so a transaction's whole
// life is a few assignments.
type model struct {
	now     time.Duration
	nextPID int64
	txns    map[string]*modelTxn
}

type modelTxn struct {
	pid       int64
	epoch     int16
	timeoutMs int32
	state     State
	parts     map[TopicPartition]bool
	deadline  time.Duration
}

func (m *model) init(id string, timeoutMs int32) (int64, int16, *kerr.Error) {
	if timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > MaxTimeoutDefault {
		return -1, -1, kerr.InvalidTransactionTimeout
	}
	t := m.txns[id]
	if t == nil {
		t = &modelTxn{pid: 1000 + m.nextPID, epoch: 0, timeoutMs: timeoutMs, state: Empty}
		m.nextPID++
		m.txns[id] = t
		return t.pid, t.epoch, nil
	}
	if t.state == Ongoing {
		t.epoch++
		t.state, t.parts = CompleteAbort, nil
		return -1, -1, kerr.ConcurrentTransactions
	}
	t.epoch++
	t.timeoutMs, t.state = timeoutMs, Empty
	return t.pid, t.epoch, nil
}

func (m *model) check(id string, pid int64, epoch int16) (*modelTxn, *kerr.Error) {
	t := m.txns[id]
	if t == nil || t.pid != pid {
		return nil, kerr.InvalidProducerIDMapping
	}
	if t.epoch != epoch {
		return nil, kerr.ProducerFenced
	}
	return t, nil
}

func (m *model) add(id string, pid int64, epoch int16, tps []TopicPartition) *kerr.Error {
	t, err := m.check(id, pid, epoch)
	if err != nil {
		return err
	}
	if t.state != Ongoing {
		t.state, t.parts, t.deadline = Ongoing, map[TopicPartition]bool{}, m.now+time.Duration(t.timeoutMs)*time.Millisecond
	}
	for _, tp := range tps {
		t.parts[tp] = true
	}
	return nil
}

func (m *model) end(id string, pid int64, epoch int16, commit bool) *kerr.Error {
	t, err := m.check(id, pid, epoch)
	if err != nil {
		return err
	}
	switch {
	case t.state == Ongoing && commit:
		t.state, t.parts = CompleteCommit, nil
	case t.state == Ongoing:
		t.state, t.parts = CompleteAbort, nil
	case t.state == CompleteCommit && commit, t.state == CompleteAbort && !commit:
	default:
		return kerr.InvalidTxnState
	}
	return nil
}

func (m *model) advance(d time.Duration) {
	m.now += d
	for _, t := range m.txns {
		if t.state == Ongoing && t.deadline <= m.now {
			t.epoch++
			t.state, t.parts = CompleteAbort, nil
		}
	}
}

func (m *model) failover() {
	for _, t := range m.txns {
		if t.state == Ongoing {
			t.deadline = m.now + time.Duration(t.timeoutMs)*time.Millisecond
		}
	}
}

var (
	ids    = []string{"a", "b", "c"}
	topics = []TopicPartition{tp("x", 0), tp("x", 1), tp("y", 0)}
)

// TestCoordinatorMatchesModel runs random requests against the coordinator
// (with a log and markers that never fail) and the naive model, comparing
// every answer and every transactional id's state.
func TestCoordinatorMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(t, Config{})
		m := &model{txns: map[string]*modelTxn{}}
		for step := 0; step < 60; step++ {
			id := rapid.SampledFrom(ids).Draw(rt, "id")
			// A producer uses the id's current pid and epoch, or a stale
			// epoch (a zombie).
			pid, epoch := int64(-1), int16(-1)
			if mt := m.txns[id]; mt != nil {
				pid, epoch = mt.pid, mt.epoch-int16(rapid.IntRange(0, 1).Draw(rt, "stale"))
			}
			var what string
			var got, want *kerr.Error
			switch op := rapid.IntRange(0, 9).Draw(rt, "op"); {
			case op < 2:
				ms := rapid.SampledFrom([]int32{0, 500, 1000, 5000, 900001}).Draw(rt, "timeout")
				r := h.init(id, ms)
				wp, we, werr := m.init(id, ms)
				what, got, want = fmt.Sprintf("init %s %d", id, ms), r.err, werr
				if r.err == nil && (r.pid != wp || r.epoch != we) {
					rt.Fatalf("init %s: %d/%d, model %d/%d", id, r.pid, r.epoch, wp, we)
				}
			case op < 5:
				tps := rapid.SliceOfN(rapid.SampledFrom(topics), 1, 3).Draw(rt, "tps")
				what, got, want = "add "+id, h.add(id, pid, epoch, tps...).err, m.add(id, pid, epoch, tps)
			case op < 7:
				commit := rapid.Bool().Draw(rt, "commit")
				what, got, want = fmt.Sprintf("end %s %v", id, commit), h.end(id, pid, epoch, commit).err, m.end(id, pid, epoch, commit)
			case op < 9:
				d := time.Duration(rapid.IntRange(1, 1500).Draw(rt, "ms")) * time.Millisecond
				h.advance(d)
				m.advance(d)
				what = "advance"
			default:
				h.failover()
				m.failover()
				what = "failover"
			}
			if got != want {
				rt.Fatalf("step %d %s: got %v, model %v", step, what, got, want)
			}
			compare(rt, h.c, m)
		}
	})
}

func compare(rt *rapid.T, c *Coordinator, m *model) {
	for _, id := range ids {
		d, ok := c.Describe(id)
		mt := m.txns[id]
		if ok != (mt != nil) {
			rt.Fatalf("%s: described %v, model has %v", id, ok, mt != nil)
		}
		if !ok {
			continue
		}
		var parts []TopicPartition
		for _, tp := range topics {
			if mt.parts[tp] {
				parts = append(parts, tp)
			}
		}
		if d.State != mt.state || d.ProducerID != mt.pid || d.ProducerEpoch != mt.epoch || !reflect.DeepEqual(d.Partitions, parts) && len(parts)+len(d.Partitions) > 0 {
			rt.Fatalf("%s: %v %d/%d %v, model %v %d/%d %v", id, d.State, d.ProducerID, d.ProducerEpoch, d.Partitions, mt.state, mt.pid, mt.epoch, parts)
		}
	}
}

// TestCoordinatorUnderFaults runs random requests while log writes and
// markers are held, fail, and the coordinator fails over, and checks the
// safety properties: a marker is only ever sent for a decision already
// durable; the committed records of each id follow the state machine; and,
// once faults stop, every transaction completes, every acknowledged commit
// has its commit marker, and a replay of the log equals the live state.
func TestCoordinatorUnderFaults(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(t, Config{RetryBackoff: 50 * time.Millisecond})
		type held struct {
			pid   int64
			epoch int16
		}
		producers := map[string]held{}
		type commitAck struct {
			id    string
			pid   int64
			epoch int16
		}
		var acked []commitAck
		for step := 0; step < 80; step++ {
			id := rapid.SampledFrom(ids).Draw(rt, "id")
			p, ok := producers[id]
			switch op := rapid.IntRange(0, 13).Draw(rt, "op"); {
			case op < 2:
				h.c.InitProducerID(id, 1000, -1, -1, h.now, func(pid int64, epoch int16, err *kerr.Error) {
					if err == nil {
						producers[id] = held{pid, epoch}
					}
				})
			case op < 5 && ok:
				tps := rapid.SliceOfN(rapid.SampledFrom(topics), 1, 2).Draw(rt, "tps")
				h.add(id, p.pid, p.epoch, tps...)
			case op < 7 && ok:
				commit := rapid.Bool().Draw(rt, "commit")
				h.c.EndTxn(id, p.pid, p.epoch, commit, h.now, func(err *kerr.Error) {
					if err == nil && commit {
						acked = append(acked, commitAck{id, p.pid, p.epoch})
					}
				})
			case op == 7:
				h.log.Hold = rapid.Bool().Draw(rt, "hold")
			case op == 8:
				h.log.CommitAll()
			case op == 9:
				h.log.FailAll(kerr.RequestTimedOut)
			case op == 10:
				if rapid.Bool().Draw(rt, "markersFail") {
					h.markers.failWith = kerr.NotLeaderForPartition
				} else {
					h.markers.failWith = nil
				}
			case op == 11:
				h.failover()
			default:
				h.advance(time.Duration(rapid.IntRange(1, 800).Draw(rt, "ms")) * time.Millisecond)
			}
			for _, sm := range h.markers.tried {
				if !sm.durable {
					rt.Fatalf("marker sent before its decision was durable: %+v", sm.Marker)
				}
			}
		}
		// Heal and let everything finish.
		h.log.Hold, h.markers.failWith = false, nil
		h.log.CommitAll()
		h.advance(10 * time.Second)
		h.log.CommitAll()
		for _, id := range ids {
			if d, ok := h.c.Describe(id); ok && (d.State == Ongoing || d.State.decided()) {
				rt.Fatalf("%s still %v after healing", id, d.State)
			}
		}
		checkLogTransitions(rt, h.log.Committed)
		for _, a := range acked {
			found := false
			for _, sm := range h.markers.sent {
				if sm.TransactionalID == a.id && sm.ProducerID == a.pid && sm.ProducerEpoch == a.epoch && sm.Commit {
					found = true
				}
			}
			if !found {
				rt.Fatalf("acknowledged commit of %s %d/%d has no commit marker", a.id, a.pid, a.epoch)
			}
		}
		live := h.c.List(nil, nil)
		h.failover()
		if replayed := h.c.List(nil, nil); !reflect.DeepEqual(live, replayed) {
			rt.Fatalf("replay differs:\nlive     %+v\nreplayed %+v", live, replayed)
		}
	})
}

// checkLogTransitions checks that each id's committed records follow the
// state machine and that its producer epoch never goes back.
func checkLogTransitions(rt *rapid.T, recs []Record) {
	c := New(Config{}, Env{})
	prev := map[string]Description{}
	for _, r := range recs {
		if err := c.Replay(r.Key, r.Value); err != nil {
			rt.Fatalf("replay: %v", err)
		}
		for _, d := range c.List(nil, nil) {
			p, ok := prev[d.TransactionalID]
			if ok && (p.State != d.State || p.ProducerEpoch != d.ProducerEpoch) {
				if !canMove(p.State, d.State) {
					rt.Fatalf("%s: %v -> %v", d.TransactionalID, p.State, d.State)
				}
				if p.ProducerID == d.ProducerID && d.ProducerEpoch < p.ProducerEpoch {
					rt.Fatalf("%s: epoch %d -> %d", d.TransactionalID, p.ProducerEpoch, d.ProducerEpoch)
				}
			}
			prev[d.TransactionalID] = d
		}
	}
}
