package share

import (
	"errors"
	"math/rand"
	"time"
)

// RecordState is the state of an in-flight record.
type RecordState int8

// The record states; the numbers are Kafka's persisted DeliveryState
// values where Kafka has one (Acquired is never persisted).
const (
	Available    RecordState = 0
	Acquired     RecordState = 1
	Acknowledged RecordState = 2
	Archived     RecordState = 4
)

// AckType is an acknowledgement type, as numbered on the wire.
type AckType int8

// The acknowledgement types of ShareFetch and ShareAcknowledge.
const (
	AckGap     AckType = 0
	AckAccept  AckType = 1
	AckRelease AckType = 2
	AckReject  AckType = 3
	AckRenew   AckType = 4
)

// Errors of Acknowledge. ErrInvalidRecordState maps to Kafka's
// INVALID_RECORD_STATE, ErrInvalidRequest to INVALID_REQUEST.
var (
	ErrInvalidRecordState = errors.New("share: record not acquired by this member")
	ErrInvalidRequest     = errors.New("share: invalid acknowledgement")
)

// Config bounds a share-partition.
type Config struct {
	DeliveryLimit int16         // share.delivery.count.limit, >= 1
	Lock          time.Duration // share.record.lock.duration.ms, > 0
	MaxInFlight   int64         // group.share.partition.max.record.locks, > 0
	Backoff       Backoff       // redelivery backoff (Floe's retry policy); zero: none
}

// Backoff is a retry policy: a record released (or whose lock expired)
// after its n-th delivery may be acquired again only once
// min(Max, Initial*Multiplier^(n-1)) has passed, that delay scaled by a
// random factor in [1-Jitter, 1+Jitter] (Partition.SetRand; none without
// one). Multiplier 1 is a fixed backoff. The delay is not persisted: after
// a failover released records are due at once.
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
	Jitter     float64 // 0 to 1
}

// delay is the backoff after delivery count n, before jitter.
func (b Backoff) delay(n int16) time.Duration {
	if b.Initial <= 0 || n < 1 {
		return 0
	}
	d := float64(b.Initial)
	for i := int16(1); i < n && (b.Max <= 0 || d < float64(b.Max)); i++ {
		d *= max(b.Multiplier, 1)
	}
	if b.Max > 0 {
		d = min(d, float64(b.Max))
	}
	return time.Duration(d)
}

// DefaultConfig is Kafka's defaults.
func DefaultConfig() Config {
	return Config{DeliveryLimit: 5, Lock: 30 * time.Second, MaxInFlight: 2000}
}

type record struct {
	state     RecordState
	count     int16
	owner     string
	lockUntil time.Duration
	notBefore time.Duration // an Available record is not acquired before this (backoff)
}

// Partition is one share-partition. Not safe for concurrent use.
//
// Invariant: recs[i] is offset start+i; len(recs) == end-start; recs[0],
// when present, is not finished (Acknowledged or Archived).
type Partition struct {
	cfg   Config
	start int64
	recs  []record
	rng   *rand.Rand // backoff jitter; nil: none
}

// SetRand gives the partition the seeded generator its backoff jitter
// draws from (the node's, so a simulation replays).
func (p *Partition) SetRand(rng *rand.Rand) { p.rng = rng }

// New returns an empty share-partition starting at offset start (chosen
// by share.auto.offset.reset: the log end for latest, the log start for
// earliest).
func New(cfg Config, start int64) *Partition {
	return &Partition{cfg: cfg, start: start}
}

// Configure changes the partition's bounds (its group's configs changed).
// Available records already at the new delivery limit are archived, as a
// release at that limit would have; records held keep their locks.
func (p *Partition) Configure(cfg Config) {
	if cfg == p.cfg {
		return
	}
	p.cfg = cfg
	for i := range p.recs {
		if r := &p.recs[i]; r.state == Available && r.count >= cfg.DeliveryLimit {
			r.state = Archived
		}
	}
	p.advance()
}

// Start is the share-partition start offset (SPSO).
func (p *Partition) Start() int64 { return p.start }

// End is the share-partition end offset (SPEO): the first offset never
// acquired.
func (p *Partition) End() int64 { return p.start + int64(len(p.recs)) }

// Range is an acquired run of offsets with one delivery count.
type Range struct {
	First, Last   int64
	DeliveryCount int16
}

// expire turns records whose lock ran out at now back into Available (or
// Archived at the delivery limit).
func (p *Partition) expire(now time.Duration) {
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == Acquired && r.lockUntil <= now {
			p.release(r, now)
		}
	}
	p.advance()
}

// release makes a record Available again at now, due after the backoff
// of its delivery count, or Archived at the delivery limit.
func (p *Partition) release(r *record, now time.Duration) {
	r.owner, r.lockUntil = "", 0
	if r.count >= p.cfg.DeliveryLimit {
		r.state = Archived
		return
	}
	r.state = Available
	d := p.cfg.Backoff.delay(r.count)
	if j := p.cfg.Backoff.Jitter; d > 0 && j > 0 && p.rng != nil {
		d = time.Duration(float64(d) * (1 + min(j, 1)*(2*p.rng.Float64()-1)))
	}
	r.notBefore = now + d
}

// due reports whether a record may be acquired at now.
func (r *record) due(now time.Duration) bool { return r.state == Available && r.notBefore <= now }

// advance moves Start past finished records.
func (p *Partition) advance() {
	n := 0
	for n < len(p.recs) && (p.recs[n].state == Acknowledged || p.recs[n].state == Archived) {
		n++
	}
	p.start += int64(n)
	p.recs = p.recs[n:]
}

// Trim archives every offset below logStart (deleted from the log) and
// moves Start there.
func (p *Partition) Trim(logStart int64) {
	if logStart <= p.start {
		return
	}
	if logStart >= p.End() {
		p.start, p.recs = logStart, nil
		return
	}
	p.recs = p.recs[logStart-p.start:]
	p.start = logStart
	p.advance()
}

// NextFrom is the lowest offset Acquire could hand out at now: the first
// Available record, or End. The node reads the log from here.
func (p *Partition) NextFrom(now time.Duration) int64 {
	p.expire(now)
	for i := range p.recs {
		if p.recs[i].due(now) {
			return p.start + int64(i)
		}
	}
	return p.End()
}

// Acquire hands up to max Available records below readEnd (the end of
// what the node read from the log) to member at now, oldest first:
// Available in-flight records, then new offsets from End, within
// MaxInFlight. Each acquired record's delivery count goes up by one and
// its lock runs until now + Config.Lock. It returns the acquired runs in
// offset order and whether anything changed.
func (p *Partition) Acquire(now time.Duration, member string, readEnd int64, max int) []Range {
	p.expire(now)
	var out []Range
	take := func(off int64, r *record) {
		r.state, r.owner, r.lockUntil = Acquired, member, now+p.cfg.Lock
		r.count++
		if n := len(out); n > 0 && out[n-1].Last == off-1 && out[n-1].DeliveryCount == r.count {
			out[n-1].Last = off
			return
		}
		out = append(out, Range{First: off, Last: off, DeliveryCount: r.count})
	}
	got := 0
	for i := range p.recs {
		off := p.start + int64(i)
		if got >= max || off >= readEnd {
			return out
		}
		if p.recs[i].due(now) {
			take(off, &p.recs[i])
			got++
		}
	}
	for got < max && p.End() < readEnd && int64(len(p.recs)) < p.cfg.MaxInFlight {
		p.recs = append(p.recs, record{})
		take(p.End()-1, &p.recs[len(p.recs)-1])
		got++
	}
	return out
}

// Ack is one acknowledgement batch: offsets First..Last, with either one
// type for all of them or one per offset.
type Ack struct {
	First, Last int64
	Types       []AckType
}

// Acknowledge applies acks from member at now, all or nothing: if any
// offset is not acquired by member with a valid lock (including offsets
// outside [Start, End)), or an ack is malformed, it returns an error and
// changes nothing. Gap and Reject archive, Accept acknowledges, Release
// makes the record Available again (Archived at the delivery limit), Renew
// extends the lock to now + Config.Lock. Batches must ascend without
// overlap.
func (p *Partition) Acknowledge(now time.Duration, member string, acks []Ack) error {
	p.expire(now)
	for i, a := range acks {
		if err := wellFormed(a); err != nil {
			return err
		}
		if i > 0 && a.First <= acks[i-1].Last {
			return ErrInvalidRequest // batches must ascend without overlap
		}
	}
	for _, a := range acks {
		if err := p.check(member, a); err != nil {
			return err
		}
	}
	for _, a := range acks {
		for off := a.First; off <= a.Last; off++ {
			t := a.Types[0]
			if len(a.Types) > 1 {
				t = a.Types[off-a.First]
			}
			p.apply(now, &p.recs[off-p.start], t)
		}
	}
	p.advance()
	return nil
}

// wellFormed checks an ack alone: a range, and known types, one or one per
// offset.
func wellFormed(a Ack) error {
	if a.First > a.Last || len(a.Types) == 0 || (len(a.Types) > 1 && int64(len(a.Types)) != a.Last-a.First+1) {
		return ErrInvalidRequest
	}
	for _, t := range a.Types {
		if t < AckGap || t > AckRenew {
			return ErrInvalidRequest
		}
	}
	return nil
}

// check reports whether member holds every offset of a.
func (p *Partition) check(member string, a Ack) error {
	if a.First < p.start || a.Last >= p.End() {
		return ErrInvalidRecordState
	}
	for off := a.First; off <= a.Last; off++ {
		r := p.recs[off-p.start]
		if r.state != Acquired || r.owner != member {
			return ErrInvalidRecordState
		}
	}
	return nil
}

func (p *Partition) apply(now time.Duration, r *record, t AckType) {
	switch t {
	case AckAccept:
		r.state, r.owner, r.lockUntil = Acknowledged, "", 0
	case AckRelease:
		p.release(r, now)
	case AckRenew:
		r.lockUntil = now + p.cfg.Lock
	default: // AckGap, AckReject
		r.state, r.owner, r.lockUntil = Archived, "", 0
	}
}

// ReleaseMember releases every record member holds (its share session
// closed or it left the group), as if each lock expired now.
func (p *Partition) ReleaseMember(now time.Duration, member string) {
	p.expire(now)
	for i := range p.recs {
		if r := &p.recs[i]; r.state == Acquired && r.owner == member {
			p.release(r, now)
		}
	}
	p.advance()
}

// Record is one in-flight record's view, for tests and describe.
type Record struct {
	Offset        int64
	State         RecordState
	DeliveryCount int16
	Owner         string
	LockUntil     time.Duration
}

// InFlight returns the records in [Start, End) as of the last call (it
// does not expire locks).
func (p *Partition) InFlight() []Record {
	out := make([]Record, len(p.recs))
	for i, r := range p.recs {
		out[i] = Record{Offset: p.start + int64(i), State: r.state, DeliveryCount: r.count, Owner: r.owner, LockUntil: r.lockUntil}
	}
	return out
}
