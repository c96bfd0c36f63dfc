package share

import (
	"errors"
	"reflect"
	"testing"
)

func cfgDLQ() Config { c := cfg3(); c.DeadLetter = true; return c }

// A rejected record and one whose lock lapsed at the limit both wait for
// their copy, holding the start offset, and are never handed out again;
// DeadLettered archives them one at a time, moving the sequence on.
func TestDeadLetterRejectAndLimit(t *testing.T) {
	p := New(cfgDLQ(), 0)
	p.Acquire(0, "a", 3, 3)
	if err := p.Acknowledge(sec, "a", []Ack{{0, 0, []AckType{AckReject}}, {2, 2, []AckType{AckAccept}}}); err != nil {
		t.Fatal(err)
	}
	now := sec
	for i := 0; i < 3; i++ { // offset 1: three lock expiries reach the limit of 3
		now += 10 * sec
		p.Acquire(now, "b", 3, 3)
	}
	now += 10 * sec
	dl, ok := p.NextDeadLetter(now)
	if !ok || dl != (DeadLetter{Offset: 0, DeliveryCount: 1, Reason: ReasonRejected}) {
		t.Fatalf("first dead letter %+v %v", dl, ok)
	}
	if got := p.Acquire(now, "b", 3, 3); got != nil {
		t.Fatalf("dead-lettering records handed out: %v", got)
	}
	if p.Start() != 0 {
		t.Fatalf("start %d moved past a record whose copy is owed", p.Start())
	}
	p.SetDeadLetterProducer(7)
	if err := p.DeadLettered(0, true); !errors.Is(err, ErrNotDeadLettering) {
		t.Fatalf("archived as copied before its copy was begun: %v", err)
	}
	if err := p.BeginDeadLetter(0); err != nil {
		t.Fatal(err)
	}
	if err := p.BeginDeadLetter(1); !errors.Is(err, ErrNotDeadLettering) {
		t.Fatalf("a second copy begun while one is pending: %v", err)
	}
	if err := p.DeadLettered(0, true); err != nil {
		t.Fatal(err)
	}
	dl, ok = p.NextDeadLetter(now)
	if !ok || dl != (DeadLetter{Offset: 1, DeliveryCount: 3, Reason: ReasonDeliveryLimit}) {
		t.Fatalf("second dead letter %+v %v", dl, ok)
	}
	if err := p.DeadLettered(0, true); !errors.Is(err, ErrNotDeadLettering) {
		t.Fatalf("archived twice: %v", err)
	}
	if err := p.BeginDeadLetter(1); err != nil {
		t.Fatal(err)
	}
	if err := p.DeadLettered(1, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.NextDeadLetter(now); ok || p.Start() != 3 || p.DeadLetterProducer() != (Producer{PID: 7, Seq: 2, Pending: -1}) {
		t.Fatalf("after both copies: start %d producer %+v", p.Start(), p.DeadLetterProducer())
	}
}

// The persisted image keeps dead letters, their reasons and the producer
// with its pending copy, and a record at the limit whose expiry was never
// written is dead-lettered on restore. After a restore the pending record
// is copied next, though a lower one waits too (its sequence may have been
// used for it). A restore or Configure without a dead-letter topic (a
// broker whose metadata lags) keeps the waiting records.
func TestDeadLetterSurvivesRestore(t *testing.T) {
	p := New(cfgDLQ(), 0)
	p.SetDeadLetterProducer(4)
	p.Acquire(0, "a", 2, 2)
	if err := p.Acknowledge(0, "a", []Ack{{0, 1, []AckType{AckReject}}}); err != nil {
		t.Fatal(err)
	}
	if err := p.BeginDeadLetter(1); err != nil {
		t.Fatal(err)
	}
	st := p.State(0)
	st.End = 3
	st.Batches = append(st.Batches, Batch{First: 2, Last: 2, State: Available, Count: 3}) // at the limit
	q, err := Restore(cfgDLQ(), DecodeStateMust(t, EncodeState(st)), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{{Offset: 0, State: DeadLettering, DeliveryCount: 1, Reason: ReasonRejected},
		{Offset: 1, State: DeadLettering, DeliveryCount: 1, Reason: ReasonRejected},
		{Offset: 2, State: DeadLettering, DeliveryCount: 3, Reason: ReasonDeliveryLimit}}
	if got := q.InFlight(); !reflect.DeepEqual(got, want) || q.DeadLetterProducer() != (Producer{PID: 4, Pending: 1}) {
		t.Fatalf("restored %+v producer %+v", got, q.DeadLetterProducer())
	}
	if dl, ok := q.NextDeadLetter(0); !ok || dl.Offset != 1 {
		t.Fatalf("next dead letter after restore %+v, want the pending offset 1", dl)
	}
	lag, err := Restore(cfg3(), st, 0)
	if err != nil {
		t.Fatal(err)
	}
	q.Configure(cfg3())
	if lag.Start() != 0 || q.Start() != 0 {
		t.Fatalf("without a dead-letter topic the waiting records went: starts %d and %d", lag.Start(), q.Start())
	}
	// The log's start passes the pending record: its sequence may be used,
	// so the producer is dropped.
	q.Trim(2)
	if _, ok := q.NextDeadLetter(0); !ok || q.DeadLetterProducer().PID != -1 {
		t.Fatalf("after trimming the pending record: producer %+v", q.DeadLetterProducer())
	}
}

// A gap is no record: archived, never dead-lettered.
func TestDeadLetterGapArchived(t *testing.T) {
	p := New(cfgDLQ(), 0)
	p.Acquire(0, "a", 1, 1)
	if err := p.Acknowledge(0, "a", []Ack{{0, 0, []AckType{AckGap}}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.NextDeadLetter(0); ok || p.Start() != 1 {
		t.Fatalf("gap dead-lettered (start %d)", p.Start())
	}
}
