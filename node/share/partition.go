package share

import (
	"errors"
	"math"
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
	// DeadLettering is Floe's (Kafka has no such state): the record is
	// to be copied to the group's dead-letter topic. It is persisted, is
	// never acquired, and holds Start until the node has the copy
	// committed and calls DeadLettered (then it is Archived).
	DeadLettering RecordState = 8
)

// Reason is why a record is dead-lettered.
type Reason int8

// The reasons, as persisted.
const (
	ReasonNone          Reason = 0
	ReasonRejected      Reason = 1 // a consumer rejected it
	ReasonDeliveryLimit Reason = 2 // it reached share.delivery.count.limit
)

// String is the reason as the dead-letter copy's header names it.
func (r Reason) String() string {
	switch r {
	case ReasonRejected:
		return "rejected"
	case ReasonDeliveryLimit:
		return "delivery-limit"
	}
	return "none"
}

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
	// DeadLetter: a rejected record or one at the delivery limit becomes
	// DeadLettering, not Archived. The node turns it on for every group
	// and archives uncopied itself, once it knows with fresh metadata
	// that the group has no dead-letter topic (node/share_dlq.go).
	DeadLetter bool
	// Settle: a released record (or one whose lock ran out) is not given
	// its backoff at once but waits unsettled, never acquired, until the
	// node calls Settle with a Config it knows to be current: the node's
	// copy of the group's retry policy may lag the controller, and a
	// policy a client was told is set must hold for every release after
	// that (simulator seed 917170). The node turns it on for every group
	// (node/share_backoff.go).
	Settle bool
}

// Backoff is a retry policy: a record released (or whose lock expired)
// after its n-th delivery may be acquired again only once
// min(Max, Initial*Multiplier^(n-1)) has passed, that delay scaled by a
// random factor in [1-Jitter, 1+Jitter] (Partition.SetRand; none without
// one). Multiplier 1 is a fixed backoff. What is left of a delay is part
// of the persisted image (Batch.WaitMs), so a failover does not cut it
// short (Restore says how it is measured).
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
	reason    Reason // DeadLettering only
	count     int16
	owner     string
	lockUntil time.Duration
	notBefore time.Duration // an Available record is not acquired before this (backoff)
	// unsettled: an Available record released at releasedAt (Config.Settle)
	// whose backoff is not drawn yet; it is not acquired until Settle.
	unsettled  bool
	releasedAt time.Duration
	since      time.Duration // an Acquired record's acquisition time (for the age metric)
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
	dlq   Producer   // the dead-letter copies' idempotent producer; PID < 0: none yet
}

// SetRand gives the partition the seeded generator its backoff jitter
// draws from (the node's, so a simulation replays).
func (p *Partition) SetRand(rng *rand.Rand) { p.rng = rng }

// New returns an empty share-partition starting at offset start (chosen
// by share.auto.offset.reset: the log end for latest, the log start for
// earliest).
func New(cfg Config, start int64) *Partition {
	return &Partition{cfg: cfg, start: start, dlq: noProducer}
}

// Configure changes the partition's bounds (its group's configs changed).
// Available records already at the new delivery limit are archived (or
// dead-lettered), as a release at that limit would have; records held
// keep their locks. Records waiting for their dead-letter copy keep
// waiting even when cfg has no dead-letter topic: a broker whose metadata
// lags may not know it yet, and archiving them would lose them.
func (p *Partition) Configure(cfg Config) {
	if cfg == p.cfg {
		return
	}
	p.cfg = cfg
	if !cfg.Settle {
		p.Settle(math.MaxInt64) // no one else will: drawn from cfg now
	}
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == Available && r.count >= cfg.DeliveryLimit {
			p.finish(r, ReasonDeliveryLimit)
		}
	}
	p.advance()
}

// finish ends a record that failed: DeadLettering for why when the group
// has a dead-letter topic, else Archived.
func (p *Partition) finish(r *record, why Reason) {
	r.owner, r.lockUntil = "", 0
	if p.cfg.DeadLetter {
		r.state, r.reason = DeadLettering, why
		return
	}
	r.state = Archived
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
		p.finish(r, ReasonDeliveryLimit)
		return
	}
	r.state = Available
	if p.cfg.Settle {
		r.unsettled, r.releasedAt, r.notBefore = true, now, 0
		return
	}
	p.backOff(r, now)
}

// backOff draws r's backoff for its delivery count from the current
// config, starting at releasedAt.
func (p *Partition) backOff(r *record, releasedAt time.Duration) {
	d := p.cfg.Backoff.delay(r.count)
	if j := p.cfg.Backoff.Jitter; d > 0 && j > 0 && p.rng != nil {
		d = time.Duration(float64(d) * (1 + min(j, 1)*(2*p.rng.Float64()-1)))
	}
	r.unsettled, r.releasedAt, r.notBefore = false, 0, releasedAt+d
}

// Unsettled reports whether some record waits for Settle at now (locks
// that ran out are expired first: their records wait too).
func (p *Partition) Unsettled(now time.Duration) bool {
	p.expire(now)
	for i := range p.recs {
		if p.recs[i].state == Available && p.recs[i].unsettled {
			return true
		}
	}
	return false
}

// Settle draws, from the current config (the caller makes it current
// with Configure first), the backoff of every unsettled record released
// at or before upTo, each delay running from its release; records
// released after upTo stay unsettled (their release may postdate what the
// caller knows to be current).
func (p *Partition) Settle(upTo time.Duration) {
	for i := range p.recs {
		if r := &p.recs[i]; r.state == Available && r.unsettled && r.releasedAt <= upTo {
			p.backOff(r, r.releasedAt)
		}
	}
}

// due reports whether a record may be acquired at now.
func (r *record) due(now time.Duration) bool {
	return r.state == Available && !r.unsettled && r.notBefore <= now
}

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
		r.state, r.owner, r.lockUntil, r.since = Acquired, member, now+p.cfg.Lock, now
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
	case AckReject:
		p.finish(r, ReasonRejected)
	default: // AckGap: no record there (compacted away, or a control batch)
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
	Reason        Reason        // DeadLettering only
	AcquiredAt    time.Duration // Acquired only
}

// InFlight returns the records in [Start, End) as of the last call (it
// does not expire locks).
func (p *Partition) InFlight() []Record {
	out := make([]Record, len(p.recs))
	for i, r := range p.recs {
		out[i] = Record{Offset: p.start + int64(i), State: r.state, DeliveryCount: r.count, Owner: r.owner, LockUntil: r.lockUntil, Reason: r.reason}
		if r.state == Acquired {
			out[i].AcquiredAt = r.since
		}
	}
	return out
}

// Producer is the idempotent producer a share-partition's dead-letter
// copies are written under: PID from the controller, Seq the sequence of
// the next copy (the count of copies written since PID was taken), and
// Pending the offset the copy under Seq is for (-1: none yet). It is part
// of the persisted image, Pending written before its copy is sent, so a
// coordinator that takes over re-sends that same record under the same
// PID and sequence, which the dead-letter partition drops as a duplicate
// if the first copy got there. (Without Pending, a new coordinator could
// send another record under a sequence already used, and the partition
// would drop that record as a duplicate: lost.)
type Producer struct {
	PID     int64 `json:"pid"`
	Seq     int32 `json:"seq"`
	Pending int64 `json:"pending"`
}

var noProducer = Producer{PID: -1, Pending: -1}

// DeadLetter is a record waiting to be copied to the dead-letter topic.
type DeadLetter struct {
	Offset        int64
	DeliveryCount int16
	Reason        Reason
}

// NextDeadLetter returns the record to copy next at now (locks that ran
// out are expired first, so a record at the delivery limit whose lock
// lapsed is found): the pending one if there is one, else the lowest
// DeadLettering record. A pending record that is no longer waiting (the
// log's start passed it) leaves its sequence possibly used: the producer
// is dropped, so the node takes a new one.
func (p *Partition) NextDeadLetter(now time.Duration) (DeadLetter, bool) {
	p.expire(now)
	if off := p.dlq.Pending; off >= 0 {
		if off >= p.start && off < p.End() && p.recs[off-p.start].state == DeadLettering {
			r := p.recs[off-p.start]
			return DeadLetter{Offset: off, DeliveryCount: r.count, Reason: r.reason}, true
		}
		p.dlq = noProducer
	}
	for i, r := range p.recs {
		if r.state == DeadLettering {
			return DeadLetter{Offset: p.start + int64(i), DeliveryCount: r.count, Reason: r.reason}, true
		}
	}
	return DeadLetter{}, false
}

// DeadLetteringOffsets returns the offsets of every DeadLettering record,
// lowest first.
func (p *Partition) DeadLetteringOffsets() []int64 {
	var offs []int64
	for i, r := range p.recs {
		if r.state == DeadLettering {
			offs = append(offs, p.start+int64(i))
		}
	}
	return offs
}

// DeadLetterProducer returns the producer of the dead-letter copies (PID
// < 0: none taken yet).
func (p *Partition) DeadLetterProducer() Producer { return p.dlq }

// SetDeadLetterProducer starts a new producer for the copies (a fresh PID,
// sequence 0, nothing pending): the first copy, or after the dead-letter
// partition refused the old one's sequence.
func (p *Partition) SetDeadLetterProducer(pid int64) { p.dlq = Producer{PID: pid, Pending: -1} }

// ErrNotDeadLettering is the error of BeginDeadLetter and DeadLettered for
// an offset that is not waiting for its copy (or not the pending one).
var ErrNotDeadLettering = errors.New("share: record is not dead-lettering")

// BeginDeadLetter makes the DeadLettering record at off the pending copy
// (under the producer's current sequence). The node persists this before
// sending the copy.
func (p *Partition) BeginDeadLetter(off int64) error {
	if p.dlq.PID < 0 || p.dlq.Pending >= 0 || off < p.start || off >= p.End() || p.recs[off-p.start].state != DeadLettering {
		return ErrNotDeadLettering
	}
	p.dlq.Pending = off
	return nil
}

// DeadLettered archives the DeadLettering record at off. copied: it is
// the pending record and its copy is committed in the dead-letter topic,
// so the sequence moves on; otherwise it is archived uncopied (nothing to
// copy, or the copy was refused for good, its sequence not used).
// Anything else is an error and changes nothing.
func (p *Partition) DeadLettered(off int64, copied bool) error {
	if off < p.start || off >= p.End() || p.recs[off-p.start].state != DeadLettering || (copied && p.dlq.Pending != off) {
		return ErrNotDeadLettering
	}
	r := &p.recs[off-p.start]
	r.state, r.reason = Archived, ReasonNone
	if copied {
		p.dlq.Seq++
	}
	if p.dlq.Pending == off {
		p.dlq.Pending = -1
	}
	p.advance()
	return nil
}
