package share

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

var sec = time.Second

func cfg3() Config { return Config{DeliveryLimit: 3, Lock: 10 * sec, MaxInFlight: 100} }

func TestTwoMembersShareOnePartition(t *testing.T) {
	p := New(cfg3(), 0)
	a := p.Acquire(0, "a", 10, 4)
	b := p.Acquire(0, "b", 10, 4)
	if !reflect.DeepEqual(a, []Range{{0, 3, 1}}) || !reflect.DeepEqual(b, []Range{{4, 7, 1}}) {
		t.Fatalf("a %v b %v", a, b)
	}
	// b cannot acknowledge a's records, and the refusal changes nothing.
	if err := p.Acknowledge(sec, "b", []Ack{{0, 0, []AckType{AckAccept}}}); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("ack of another member's record: %v", err)
	}
	if err := p.Acknowledge(sec, "a", []Ack{{0, 3, []AckType{AckAccept}}}); err != nil {
		t.Fatal(err)
	}
	if p.Start() != 4 {
		t.Fatalf("start %d after accepting 0-3", p.Start())
	}
	// Accepted records are gone for good.
	if err := p.Acknowledge(sec, "a", []Ack{{0, 0, []AckType{AckAccept}}}); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("second accept: %v", err)
	}
}

// An acknowledgement names a member and offsets, never a delivery: it is
// valid while that member holds the record's current acquisition, as in
// Kafka's SharePartition. A member whose lock ran out cannot acknowledge
// the record another member holds now; once it is handed the record again
// itself, its acknowledgement, whichever delivery it meant, applies to the
// one it holds (simulator seed 978810 --all-faults, docs/testing.md "Bugs
// found").
func TestAckAppliesToTheMembersCurrentDelivery(t *testing.T) {
	p := New(cfg3(), 0)
	if got := p.Acquire(0, "a", 1, 1); !reflect.DeepEqual(got, []Range{{0, 0, 1}}) {
		t.Fatalf("delivery 1: %v", got)
	}
	if got := p.Acquire(10*sec, "b", 1, 1); !reflect.DeepEqual(got, []Range{{0, 0, 2}}) {
		t.Fatalf("delivery 2 after a's lock ran out: %v", got)
	}
	if err := p.Acknowledge(11*sec, "a", []Ack{{0, 0, []AckType{AckAccept}}}); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("a's late accept while b holds delivery 2: %v", err)
	}
	if got := p.Acquire(20*sec, "a", 1, 1); !reflect.DeepEqual(got, []Range{{0, 0, 3}}) {
		t.Fatalf("delivery 3 to a after b's lock ran out: %v", got)
	}
	if err := p.Acknowledge(21*sec, "b", []Ack{{0, 0, []AckType{AckAccept}}}); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("b's late accept while a holds delivery 3: %v", err)
	}
	if err := p.Acknowledge(21*sec, "a", []Ack{{0, 0, []AckType{AckAccept}}}); err != nil {
		t.Fatalf("a's accept while it holds delivery 3: %v", err)
	}
	if p.Start() != 1 || len(p.InFlight()) != 0 {
		t.Fatalf("start %d, in flight %v after the accept", p.Start(), p.InFlight())
	}
}

func TestLockExpiryRedeliversThenArchivesAtLimit(t *testing.T) {
	p := New(cfg3(), 5)
	now := time.Duration(0)
	for i := int16(1); i <= 3; i++ {
		got := p.Acquire(now, "a", 6, 10)
		if !reflect.DeepEqual(got, []Range{{5, 5, i}}) {
			t.Fatalf("delivery %d: %v", i, got)
		}
		if again := p.Acquire(now+9*sec, "b", 6, 10); again != nil {
			t.Fatalf("handed out while locked: %v", again)
		}
		now += 10 * sec // the lock expires
	}
	if got := p.Acquire(now, "b", 6, 10); got != nil || p.Start() != 6 {
		t.Fatalf("after the limit: acquired %v, start %d", got, p.Start())
	}
}

func TestAckErrorsChangeNothing(t *testing.T) {
	p := New(cfg3(), 0)
	p.Acquire(0, "a", 3, 3)
	before := p.InFlight()
	for _, acks := range [][]Ack{
		{{0, 0, []AckType{9}}},                                       // unknown type
		{{0, 2, []AckType{AckAccept, AckAccept}}},                    // wrong number of types
		{{2, 1, []AckType{AckAccept}}},                               // empty range
		{{0, 1, []AckType{AckAccept}}, {1, 2, []AckType{AckAccept}}}, // overlap
		{{0, 0, []AckType{AckAccept}}, {3, 3, []AckType{AckAccept}}}, // past End
		{{-1, 0, []AckType{AckAccept}}},                              // before Start
	} {
		if err := p.Acknowledge(sec, "a", acks); err == nil {
			t.Fatalf("%v accepted", acks)
		}
		if !reflect.DeepEqual(p.InFlight(), before) {
			t.Fatalf("%v changed the state", acks)
		}
	}
}

func TestRestoreRedeliversInFlightAndKeepsAcks(t *testing.T) {
	p := New(cfg3(), 0)
	p.Acquire(0, "a", 4, 4)
	if err := p.Acknowledge(0, "a", []Ack{{1, 1, []AckType{AckAccept}}, {2, 2, []AckType{AckReject}}}); err != nil {
		t.Fatal(err)
	}
	q, err := Restore(cfg3(), p.State(0), 0)
	if err != nil {
		t.Fatal(err)
	}
	// 0 and 3 were in flight: redelivered at once, counts kept and bumped.
	if got := q.Acquire(sec, "b", 4, 10); !reflect.DeepEqual(got, []Range{{0, 0, 2}, {3, 3, 2}}) {
		t.Fatalf("after failover: %v", got)
	}
}

func TestMaxInFlightCapsTheWindow(t *testing.T) {
	c := cfg3()
	c.MaxInFlight = 3
	p := New(c, 0)
	if got := p.Acquire(0, "a", 10, 10); !reflect.DeepEqual(got, []Range{{0, 2, 1}}) {
		t.Fatalf("%v", got)
	}
	if err := p.Acknowledge(0, "a", []Ack{{0, 0, []AckType{AckAccept}}}); err != nil {
		t.Fatal(err)
	}
	if got := p.Acquire(0, "a", 10, 10); !reflect.DeepEqual(got, []Range{{3, 3, 1}}) {
		t.Fatalf("after one accept: %v", got)
	}
}

func TestTrimArchivesDeletedRecords(t *testing.T) {
	p := New(cfg3(), 0)
	p.Acquire(0, "a", 5, 5)
	p.Trim(3)
	if p.Start() != 3 || p.End() != 5 {
		t.Fatalf("start %d end %d", p.Start(), p.End())
	}
	p.Trim(9)
	if p.Start() != 9 || p.End() != 9 {
		t.Fatalf("start %d end %d", p.Start(), p.End())
	}
}

func TestKeyAndStateRoundTrip(t *testing.T) {
	k := Key{Group: "g", Topic: "t", Partition: 3}
	b := EncodeKey(k)
	if !IsStateKey(b) {
		t.Fatal("not recognised")
	}
	if got, err := DecodeKey(b); err != nil || got != k {
		t.Fatalf("%v %v", got, err)
	}
	s := State{Start: 4, End: 9, Batches: []Batch{{4, 5, Available, 1, 0, 250, false}, {6, 6, Acknowledged, 2, 0, 0, false}, {7, 7, DeadLettering, 3, ReasonRejected, 0, false}, {8, 8, Available, 1, 0, 0, true}}, DeadLetter: &Producer{PID: 9, Seq: 2}}
	if got, err := DecodeState(EncodeState(s)); err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := Restore(cfg3(), State{Start: 4, End: 5, Batches: []Batch{{3, 4, Available, 1, 0, 0, false}}}, 0); err == nil {
		t.Fatal("batch outside the window restored")
	}
}
