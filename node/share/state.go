package share

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/floe-broker/floe/internal/plant"
)

// Batch is a run of in-flight offsets with one persisted state and
// delivery count, as in Kafka's WriteShareGroupState StateBatches.
type Batch struct {
	First int64       `json:"first"`
	Last  int64       `json:"last"`
	State RecordState `json:"state"`
	Count int16       `json:"count"`
	// Reason is why a DeadLettering run is dead-lettered.
	Reason Reason `json:"reason,omitempty"`
	// WaitMs is, for an Available run backing off (Config.Backoff), how
	// many milliseconds of its delay were left when the image was taken
	// (rounded up); 0, or absent in an image written before the field
	// existed: due at once. See Restore for how a new coordinator uses it.
	WaitMs int64 `json:"wait_ms,omitempty"`
	// Unsettled marks an Available run released while its backoff was not
	// drawn yet (Config.Settle): Restore makes it unsettled again, its
	// delay to run from the restore once the new coordinator settles it.
	// An image written before the field existed has none.
	Unsettled bool `json:"unsettled,omitempty"`
}

// State is a share-partition's persistent image: Start, End and the
// in-flight records, with Acquired stored as Available (a lock does not
// survive a failover; the record is redelivered, its count kept).
type State struct {
	Start   int64   `json:"start"`
	End     int64   `json:"end"`
	Batches []Batch `json:"batches,omitempty"`
	// DeadLetter is the producer of the dead-letter copies, once one was
	// taken.
	DeadLetter *Producer `json:"dlq,omitempty"`
}

// State returns the partition's persistent image at now (the caller's
// monotonic clock, as for every other call): a record backing off is
// stored with the part of its delay still to run after now.
func (p *Partition) State(now time.Duration) State {
	s := State{Start: p.start, End: p.End()}
	if p.dlq.PID >= 0 {
		d := p.dlq
		s.DeadLetter = &d
	}
	for i, r := range p.recs {
		off := p.start + int64(i)
		st := r.state
		if st == Acquired {
			st = Available
			if plant.Enabled(plant.ShareInFlightArchived) {
				st = Archived
			}
		}
		wait, unsettled := int64(0), false
		if r.state == Available && !plant.Enabled(plant.ShareBackoffNotPersisted) {
			unsettled = r.unsettled
			if r.notBefore > now && !unsettled {
				wait = int64((r.notBefore - now + time.Millisecond - 1) / time.Millisecond) // rounded up: never due early
			}
		}
		if n := len(s.Batches); n > 0 && s.Batches[n-1].Last == off-1 && s.Batches[n-1].State == st && s.Batches[n-1].Count == r.count && s.Batches[n-1].Reason == r.reason && s.Batches[n-1].WaitMs == wait && s.Batches[n-1].Unsettled == unsettled {
			s.Batches[n-1].Last = off
			continue
		}
		s.Batches = append(s.Batches, Batch{First: off, Last: off, State: st, Count: r.count, Reason: r.reason, WaitMs: wait, Unsettled: unsettled})
	}
	return s
}

// Restore rebuilds a partition from its persistent image at now (the
// restoring node's monotonic clock). Available records at the delivery
// limit are archived, or dead-lettered when cfg has a dead-letter topic
// (their last lock expired or was released before the failover, and that
// was not written). DeadLettering records stay so, their copy still owed,
// whatever cfg says (a broker whose metadata lags may not know the
// group's dead-letter topic yet).
//
// A record released before its backoff was settled (Batch.Unsettled) is
// unsettled again, released at now: its whole delay runs from the
// restore once the caller settles it (Config.Settle).
//
// A record that was backing off (Batch.WaitMs) is due WaitMs after now:
// the rest of its delay, as the writing coordinator measured it when it
// took the image, runs again from the restore. No clock of two nodes is
// compared (wall clocks may be skewed or jump; monotonic clocks have
// different origins), so a record is never due before the delay its
// releasing coordinator drew, whatever the skew; the price is that it may
// wait up to the time between that write and the restore longer (at most
// one whole delay, Backoff.Max with its jitter).
func Restore(cfg Config, s State, now time.Duration) (*Partition, error) {
	if s.End < s.Start {
		return nil, fmt.Errorf("share: state end %d below start %d", s.End, s.Start)
	}
	p := &Partition{cfg: cfg, start: s.Start, recs: make([]record, s.End-s.Start), dlq: noProducer}
	if s.DeadLetter != nil {
		p.dlq = *s.DeadLetter
	}
	for _, b := range s.Batches {
		if b.First < s.Start || b.Last >= s.End || b.First > b.Last {
			return nil, fmt.Errorf("share: state batch %d-%d outside %d-%d", b.First, b.Last, s.Start, s.End)
		}
		for off := b.First; off <= b.Last; off++ {
			r := &p.recs[off-s.Start]
			r.state, r.count = b.State, b.Count
			switch {
			case r.state == Acquired || r.state == Available:
				// Acquired is never stored; an old image's in-flight record
				// is due at once, as a lock lost with its coordinator is
				// not the consumer's failure.
				r.state, r.notBefore = Available, now+time.Duration(min(max(b.WaitMs, 0), maxWaitMs))*time.Millisecond
				if r.count >= cfg.DeliveryLimit {
					p.finish(r, ReasonDeliveryLimit)
				} else if b.Unsettled {
					// Released before its backoff was drawn: drawn again,
					// from the restore, once settled here (at once from
					// cfg when the caller does not settle).
					r.unsettled, r.releasedAt, r.notBefore = true, now, 0
					if !cfg.Settle {
						p.backOff(r, now)
					}
				}
			case r.state == DeadLettering:
				r.reason = b.Reason
			}
		}
	}
	p.advance()
	return p, nil
}

// maxWaitMs bounds a stored backoff remainder on restore: twice the
// longest backoff a group may configure (floe.share.retry.backoff.max.ms,
// a day, with full jitter), so a damaged image cannot hold a record back
// for ever.
const maxWaitMs = 2 * 86400000

// KeyVersion leads every share-state record key. Floe stores share state
// next to the group's other records (node/shares.go); Kafka's own key
// versions there are 0-2 (classic) and 3-13, so this one is Floe's.
const KeyVersion int16 = 0x7f01

// Key names one share-partition of one group.
type Key struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// IsStateKey reports whether a record key is a share-state key.
func IsStateKey(key []byte) bool {
	return len(key) >= 2 && int16(binary.BigEndian.Uint16(key)) == KeyVersion
}

// EncodeKey is the record key: KeyVersion, then the key as JSON.
func EncodeKey(k Key) []byte {
	b, _ := json.Marshal(k) // plain struct: cannot fail
	return append(binary.BigEndian.AppendUint16(nil, uint16(KeyVersion)), b...)
}

// DecodeKey parses a record key made by EncodeKey.
func DecodeKey(key []byte) (Key, error) {
	var k Key
	if !IsStateKey(key) {
		return k, errors.New("share: not a share-state key")
	}
	err := json.Unmarshal(key[2:], &k)
	return k, err
}

// EncodeState is the record value.
func EncodeState(s State) []byte {
	b, _ := json.Marshal(s) // plain struct: cannot fail
	return b
}

// DecodeState parses a record value made by EncodeState.
func DecodeState(v []byte) (State, error) {
	var s State
	err := json.Unmarshal(v, &s)
	return s, err
}
