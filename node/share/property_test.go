package share

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"
)

// model is the naive share-partition: a map of every offset ever
// acquired, scanned in full on every call.
type model struct {
	cfg  Config
	base int64 // the initial start
	recs map[int64]*record
	end  int64
	trim int64 // the highest Trim so far
}

func (m *model) finished(off int64) bool {
	if off < m.trim {
		return true
	}
	r := m.recs[off]
	return r != nil && (r.state == Acknowledged || r.state == Archived)
}

func (m *model) start() int64 {
	s := max(m.base, m.trim)
	for s < m.end && m.finished(s) {
		s++
	}
	if s > m.end {
		return s
	}
	return s
}

func (m *model) releaseRec(r *record) {
	r.owner, r.lockUntil = "", 0
	r.state = Available
	if r.count >= m.cfg.DeliveryLimit {
		m.fail(r, ReasonDeliveryLimit)
	}
}

// fail ends a record that failed: waiting for its dead-letter copy, or
// archived when there is no dead-letter topic.
func (m *model) fail(r *record, why Reason) {
	r.owner, r.lockUntil = "", 0
	r.state = Archived
	if m.cfg.DeadLetter {
		r.state, r.reason = DeadLettering, why
	}
}

// copied is DeadLettered for the lowest dead letter, if any.
func (m *model) copied() (DeadLetter, bool) {
	for off := m.start(); off < m.end; off++ {
		if r := m.recs[off]; r.state == DeadLettering {
			dl := DeadLetter{Offset: off, DeliveryCount: r.count, Reason: r.reason}
			r.state, r.reason = Archived, ReasonNone
			return dl, true
		}
	}
	return DeadLetter{}, false
}

func (m *model) expire(now time.Duration) {
	for _, r := range m.recs {
		if r.state == Acquired && r.lockUntil <= now {
			m.releaseRec(r)
		}
	}
}

func (m *model) acquire(now time.Duration, member string, readEnd int64, n int) []Range {
	m.expire(now)
	start := m.start()
	var got []Range
	for off := start; off < readEnd && len(got) < n; off++ {
		if off >= m.end {
			if m.end-start >= m.cfg.MaxInFlight {
				break
			}
			m.recs[off] = &record{}
			m.end = off + 1
		}
		r := m.recs[off]
		if m.finished(off) || r.state != Available {
			continue
		}
		r.state, r.owner, r.lockUntil, r.since = Acquired, member, now+m.cfg.Lock, now
		r.count++
		got = append(got, Range{off, off, r.count})
	}
	return got
}

func (m *model) ack(now time.Duration, member string, acks []Ack) error {
	m.expire(now)
	start := m.start()
	for i, a := range acks {
		if i > 0 && a.First <= acks[i-1].Last {
			return ErrInvalidRequest
		}
		if a.First > a.Last || len(a.Types) == 0 || (len(a.Types) > 1 && int64(len(a.Types)) != a.Last-a.First+1) {
			return ErrInvalidRequest
		}
		for _, t := range a.Types {
			if t < 0 || t > 4 {
				return ErrInvalidRequest
			}
		}
	}
	for _, a := range acks {
		for off := a.First; off <= a.Last; off++ {
			r := m.recs[off]
			if off < start || off >= m.end || r == nil || r.state != Acquired || r.owner != member {
				return ErrInvalidRecordState
			}
		}
	}
	for _, a := range acks {
		for off := a.First; off <= a.Last; off++ {
			t := a.Types[0]
			if len(a.Types) > 1 {
				t = a.Types[off-a.First]
			}
			r := m.recs[off]
			switch t {
			case AckAccept:
				r.state, r.owner, r.lockUntil = Acknowledged, "", 0
			case AckRelease:
				m.releaseRec(r)
			case AckRenew:
				r.lockUntil = now + m.cfg.Lock
			case AckReject:
				m.fail(r, ReasonRejected)
			default:
				r.state, r.owner, r.lockUntil = Archived, "", 0
			}
		}
	}
	return nil
}

// failover is what Restore(State()) does: locks are dropped.
func (m *model) failover() {
	for _, r := range m.recs {
		if r.state == Acquired || (r.state == Available && r.count >= m.cfg.DeliveryLimit) {
			m.releaseRec(r)
		}
	}
}

func (m *model) inFlight() []Record {
	start := m.start()
	out := []Record{}
	for off := start; off < m.end; off++ {
		r := m.recs[off]
		rec := Record{Offset: off, State: r.state, DeliveryCount: r.count, Owner: r.owner, LockUntil: r.lockUntil, Reason: r.reason}
		if r.state == Acquired {
			rec.AcquiredAt = r.since
		}
		out = append(out, rec)
	}
	return out
}

func flatten(rs []Range) []Range {
	var out []Range
	for _, r := range rs {
		for off := r.First; off <= r.Last; off++ {
			out = append(out, Range{off, off, r.DeliveryCount})
		}
	}
	return out
}

// TestPropertyAgainstModel runs random operations on a Partition and the
// naive model and checks they agree, plus the invariants: a record is
// held by one member at a time while locked, a finished record is never
// handed out again, delivery counts never go down, errors change nothing.
func TestPropertyAgainstModel(t *testing.T) {
	for seed := int64(1); seed <= 150; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runProperty(t, seed) })
	}
}

type holder struct {
	member string
	until  time.Duration
}

func runProperty(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	cfg := Config{DeliveryLimit: int16(2 + rng.Intn(3)), Lock: time.Duration(5+rng.Intn(10)) * time.Second, MaxInFlight: int64(3 + rng.Intn(20)),
		DeadLetter: seed%2 == 0}
	base := int64(rng.Intn(5))
	p := New(cfg, base)
	if cfg.DeadLetter {
		p.SetDeadLetterProducer(1)
	}
	m := &model{cfg: cfg, base: base, recs: map[int64]*record{}, end: base}
	members := []string{"a", "b", "c"}
	var now time.Duration
	logEnd := base
	held := map[int64]holder{} // the last acquisition of each offset, while not acked/released
	done := map[int64]bool{}   // accepted or archived by an ack
	maxCount := map[int64]int16{}
	for step := 0; step < 400; step++ {
		member := members[rng.Intn(len(members))]
		switch op := rng.Intn(11); {
		case op < 3:
			logEnd += int64(rng.Intn(4))
			readEnd := p.NextFrom(now) + int64(rng.Intn(8))
			readEnd = min(readEnd, logEnd)
			n := 1 + rng.Intn(6)
			got, want := p.Acquire(now, member, readEnd, n), m.acquire(now, member, readEnd, n)
			if !reflect.DeepEqual(flatten(got), want) {
				t.Fatalf("step %d: acquire got %v, model %v", step, flatten(got), want)
			}
			for _, r := range want {
				if h, ok := held[r.First]; ok && h.until > now {
					t.Fatalf("step %d: offset %d handed to %s while %s holds it until %v (now %v)", step, r.First, member, h.member, h.until, now)
				}
				if done[r.First] {
					t.Fatalf("step %d: finished offset %d handed out again", step, r.First)
				}
				held[r.First] = holder{member, now + cfg.Lock}
			}
		case op < 7:
			acks := randomAcks(rng, p, m)
			before := p.InFlight()
			errGot, errWant := p.Acknowledge(now, member, acks), m.ack(now, member, acks)
			if errGot != errWant {
				t.Fatalf("step %d: ack %v by %s: got %v, model %v", step, acks, member, errGot, errWant)
			}
			if errGot != nil {
				if after := p.InFlight(); len(after) != len(before) || p.Start() != m.start() {
					t.Fatalf("step %d: a refused ack changed the window", step)
				}
				break
			}
			for _, a := range acks {
				for off := a.First; off <= a.Last; off++ {
					ty := a.Types[0]
					if len(a.Types) > 1 {
						ty = a.Types[off-a.First]
					}
					switch ty {
					case AckRenew:
						held[off] = holder{member, now + cfg.Lock}
					case AckRelease:
						delete(held, off)
					default:
						delete(held, off)
						done[off] = true
					}
				}
			}
		case op < 8:
			p.ReleaseMember(now, member)
			m.expire(now)
			for _, r := range m.recs {
				if r.state == Acquired && r.owner == member {
					m.releaseRec(r)
				}
			}
			for off, h := range held {
				if h.member == member {
					delete(held, off)
				}
			}
		case op < 9:
			now += time.Duration(rng.Intn(8)) * time.Second
		case op < 10:
			// The node copied the lowest dead letter.
			got, ok := p.NextDeadLetter(now)
			m.expire(now)
			want, wok := m.copied()
			if ok != wok || got != want {
				t.Fatalf("step %d: next dead letter %+v %v, model %+v %v", step, got, ok, want, wok)
			}
			if ok {
				if err := p.BeginDeadLetter(got.Offset); err != nil {
					t.Fatalf("step %d: begin: %v", step, err)
				}
				if err := p.DeadLettered(got.Offset, true); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			}
		default:
			q, err := Restore(cfg, DecodeStateMust(t, EncodeState(p.State(now))), now)
			if err != nil {
				t.Fatalf("step %d: restore: %v", step, err)
			}
			p = q
			m.failover()
			held = map[int64]holder{} // a failover drops every lock
		}
		p.expire(now)
		m.expire(now)
		if got, want := p.InFlight(), m.inFlight(); !reflect.DeepEqual(got, want) || p.Start() != m.start() {
			t.Fatalf("step %d: state\n got %v start %d\nmodel %v start %d", step, got, p.Start(), want, m.start())
		}
		for _, r := range p.InFlight() {
			if r.DeliveryCount < maxCount[r.Offset] {
				t.Fatalf("step %d: delivery count of %d went down", step, r.Offset)
			}
			maxCount[r.Offset] = r.DeliveryCount
			if r.DeliveryCount > cfg.DeliveryLimit {
				t.Fatalf("step %d: offset %d delivered %d times, limit %d", step, r.Offset, r.DeliveryCount, cfg.DeliveryLimit)
			}
		}
		if int64(len(p.InFlight())) > cfg.MaxInFlight {
			t.Fatalf("step %d: %d in flight, max %d", step, len(p.InFlight()), cfg.MaxInFlight)
		}
	}
}

func DecodeStateMust(t *testing.T, b []byte) State {
	s, err := DecodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// randomAcks builds acks around the window, valid or not.
func randomAcks(rng *rand.Rand, p *Partition, m *model) []Ack {
	var acks []Ack
	for i := 0; i < 1+rng.Intn(2); i++ {
		first := p.Start() - 1 + int64(rng.Intn(int(p.End()-p.Start())+3))
		last := first + int64(rng.Intn(3))
		if rng.Intn(20) == 0 {
			last = first - 1
		}
		var types []AckType
		if rng.Intn(2) == 0 {
			types = []AckType{AckType(rng.Intn(5))}
		} else {
			for off := first; off <= last; off++ {
				types = append(types, AckType(rng.Intn(5)))
			}
		}
		if rng.Intn(30) == 0 {
			types = []AckType{AckType(5 + rng.Intn(3))}
		}
		acks = append(acks, Ack{First: first, Last: last, Types: types})
	}
	return acks
}
