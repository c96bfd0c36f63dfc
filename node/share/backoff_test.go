package share

import (
	"math/rand"
	"reflect"
	"testing"
	"time"
)

// TestBackoffDelaysRedelivery: with an exponential backoff (1 s, x2, max
// 3 s) a record released after delivery 1 is not acquired for 1 s, after
// delivery 2 for 2 s, after delivery 3 for 3 s (the cap); records behind
// it are acquired meanwhile. Jitter keeps the delay within its bounds.
func TestBackoffDelaysRedelivery(t *testing.T) {
	cfg := Config{DeliveryLimit: 10, Lock: time.Minute, MaxInFlight: 100,
		Backoff: Backoff{Initial: time.Second, Max: 3 * time.Second, Multiplier: 2}}
	p := New(cfg, 0)
	now := time.Duration(0)
	if got := p.Acquire(now, "m", 1, 10); len(got) != 1 || got[0].DeliveryCount != 1 {
		t.Fatalf("first acquire %+v", got)
	}
	for n, want := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second} {
		if err := p.Acknowledge(now, "m", []Ack{{First: 0, Last: 0, Types: []AckType{AckRelease}}}); err != nil {
			t.Fatal(err)
		}
		if got := p.Acquire(now+want-time.Millisecond, "m", 1, 10); len(got) != 0 {
			t.Fatalf("after delivery %d acquired %+v %v early (backoff %v)", n+1, got, time.Millisecond, want)
		}
		now += want
		if got := p.Acquire(now, "m", 1, 10); len(got) != 1 || got[0].DeliveryCount != int16(n+2) {
			t.Fatalf("after delivery %d and its backoff %v acquired %+v", n+1, want, got)
		}
	}
	// Jitter: 1 s +-50%, over many draws.
	cfg.Backoff = Backoff{Initial: time.Second, Multiplier: 1, Jitter: 0.5}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 200; i++ {
		q := New(cfg, 0)
		q.SetRand(rng)
		q.Acquire(0, "m", 1, 1)
		q.ReleaseMember(0, "m")
		if got := q.Acquire(500*time.Millisecond-1, "m", 1, 1); len(got) != 0 {
			t.Fatalf("jittered backoff under 0.5 s")
		}
		if got := q.Acquire(1500*time.Millisecond, "m", 1, 1); len(got) != 1 {
			t.Fatalf("jittered backoff over 1.5 s")
		}
	}
}

// TestBackoffDelay: the delay per delivery count, with and without a cap.
func TestBackoffDelay(t *testing.T) {
	for _, c := range []struct {
		b    Backoff
		n    int16
		want time.Duration
	}{
		{Backoff{}, 3, 0},
		{Backoff{Initial: time.Second, Multiplier: 2}, 1, time.Second},
		{Backoff{Initial: time.Second, Multiplier: 2}, 4, 8 * time.Second},
		{Backoff{Initial: time.Second, Multiplier: 2, Max: 5 * time.Second}, 4, 5 * time.Second},
		{Backoff{Initial: time.Second, Multiplier: 1}, 6, time.Second},
		{Backoff{Initial: time.Second}, 6, time.Second},
	} {
		if got := c.b.delay(c.n); got != c.want {
			t.Errorf("%+v after delivery %d: %v, want %v", c.b, c.n, got, c.want)
		}
	}
}

// TestBackoffNotBeforeLater: a record backing off does not hold up the
// records behind it.
func TestBackoffNotBeforeLater(t *testing.T) {
	p := New(Config{DeliveryLimit: 5, Lock: time.Minute, MaxInFlight: 100, Backoff: Backoff{Initial: time.Hour, Multiplier: 1}}, 0)
	p.Acquire(0, "m", 1, 1)
	if err := p.Acknowledge(0, "m", []Ack{{First: 0, Last: 0, Types: []AckType{AckRelease}}}); err != nil {
		t.Fatal(err)
	}
	if from := p.NextFrom(time.Second); from != 1 {
		t.Fatalf("NextFrom %d, want 1 (offset 0 backs off)", from)
	}
	if got := p.Acquire(time.Second, "m", 3, 10); len(got) != 1 || got[0].First != 1 || got[0].Last != 2 {
		t.Fatalf("acquired %+v, want 1-2", got)
	}
}

// TestBackoffSurvivesRestore: the image taken 300 ms into a 1 s backoff
// holds the 700 ms left, and a partition restored from it (on another
// node, whose monotonic clock reads anything) keeps the record back for
// those 700 ms from the restore, not less; the record behind it, released
// with no backoff left, and a record whose image predates the field (no
// wait_ms) are due at once. A jittered delay is stored rounded up to the
// millisecond, so the restored one is never shorter.
func TestBackoffSurvivesRestore(t *testing.T) {
	cfg := Config{DeliveryLimit: 5, Lock: time.Minute, MaxInFlight: 100, Backoff: Backoff{Initial: time.Second, Multiplier: 1}}
	p := New(cfg, 0)
	p.Acquire(0, "m", 2, 2)
	if err := p.Acknowledge(0, "m", []Ack{{First: 0, Last: 0, Types: []AckType{AckRelease}}}); err != nil {
		t.Fatal(err)
	}
	st := DecodeStateMust(t, EncodeState(p.State(300*time.Millisecond)))
	if want := (Batch{First: 0, Last: 0, State: Available, Count: 1, WaitMs: 700}); len(st.Batches) < 1 || st.Batches[0] != want {
		t.Fatalf("image %+v, want first batch %+v", st.Batches, want)
	}
	const at = 5 * time.Hour // the new coordinator's clock
	q, err := Restore(cfg, st, at)
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Acquire(at+699*time.Millisecond, "n", 2, 10); !reflect.DeepEqual(got, []Range{{1, 1, 2}}) {
		t.Fatalf("699 ms after the restore acquired %+v, want only offset 1", got)
	}
	if got := q.Acquire(at+700*time.Millisecond, "n", 2, 10); !reflect.DeepEqual(got, []Range{{0, 0, 2}}) {
		t.Fatalf("700 ms after the restore acquired %+v, want offset 0", got)
	}
	old, err := DecodeState([]byte(`{"start":0,"end":1,"batches":[{"first":0,"last":0,"state":0,"count":1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	q, err = Restore(cfg, old, at)
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Acquire(at, "n", 1, 10); !reflect.DeepEqual(got, []Range{{0, 0, 2}}) {
		t.Fatalf("an image without wait_ms: acquired %+v, want offset 0 at once", got)
	}
	j := New(Config{DeliveryLimit: 5, Lock: time.Minute, MaxInFlight: 100, Backoff: Backoff{Initial: time.Second, Multiplier: 1, Jitter: 0.5}}, 0)
	j.SetRand(rand.New(rand.NewSource(7)))
	j.Acquire(0, "m", 1, 1)
	j.ReleaseMember(time.Nanosecond, "m")
	due := j.recs[0].notBefore
	if w := j.State(time.Nanosecond).Batches[0].WaitMs; time.Duration(w)*time.Millisecond < due-time.Nanosecond || time.Duration(w-1)*time.Millisecond >= due-time.Nanosecond {
		t.Fatalf("jittered delay %v stored as %d ms", due-time.Nanosecond, w)
	}
}

// TestSettleDrawsBackoffFromCurrentConfig: with Config.Settle a released
// record is not acquired until Settle, whatever the time; Settle draws its
// delay from the config current then (here set after the release, as a
// node's metadata catching up would), counted from the release; a record
// released after Settle's bound stays unsettled. An unsettled record is
// persisted as such, and restored unsettled with its delay to run from
// the restore (simulator seed 917170: the node drew the delay from a stale
// config at once).
func TestSettleDrawsBackoffFromCurrentConfig(t *testing.T) {
	stale := Config{DeliveryLimit: 10, Lock: time.Minute, MaxInFlight: 100, Settle: true}
	current := stale
	current.Backoff = Backoff{Initial: 4 * time.Second, Multiplier: 1}
	p := New(stale, 0)
	if got := p.Acquire(0, "m", 2, 10); len(got) != 1 || got[0].Last != 1 {
		t.Fatalf("acquire %+v", got)
	}
	if err := p.Acknowledge(sec, "m", []Ack{{First: 0, Last: 0, Types: []AckType{AckRelease}}}); err != nil {
		t.Fatal(err)
	}
	if !p.Unsettled(sec) {
		t.Fatal("a release under Settle is not unsettled")
	}
	if got := p.Acquire(30*sec, "m", 2, 10); len(got) != 0 {
		t.Fatalf("an unsettled record acquired: %+v", got)
	}
	if err := p.Acknowledge(3*sec, "m", []Ack{{First: 1, Last: 1, Types: []AckType{AckRelease}}}); err != nil {
		t.Fatal(err)
	}
	p.Configure(current)
	p.Settle(2 * sec) // offset 0 (released at 1 s) only
	if got := p.Acquire(5*sec-1, "m", 2, 10); len(got) != 0 {
		t.Fatalf("acquired %+v before the current config's 4 s from the release at 1 s", got)
	}
	if s := p.State(5*sec - 1); len(s.Batches) != 2 || s.Batches[0].WaitMs != 1 || s.Batches[0].Unsettled || !s.Batches[1].Unsettled || s.Batches[1].WaitMs != 0 {
		t.Fatalf("state %+v: want offset 0 waiting 1 ms, offset 1 unsettled", s)
	}
	if got := p.Acquire(5*sec, "m", 2, 10); len(got) != 1 || got[0].First != 0 || got[0].Last != 0 || got[0].DeliveryCount != 2 {
		t.Fatalf("acquired %+v at 5 s, want offset 0 alone with count 2", got)
	}
	// Offset 1 is restored unsettled: its whole delay runs from the restore.
	q, err := Restore(current, p.State(5*sec), 100*sec)
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Acquire(200*sec, "m", 2, 10); len(got) != 1 || got[0].First != 0 {
		t.Fatalf("restored: acquired %+v, want offset 0 only (offset 1 unsettled)", got)
	}
	q.Settle(100 * sec)
	if got := q.Acquire(104*sec-1, "m", 2, 10); len(got) != 0 {
		t.Fatalf("restored offset 1 acquired %+v before 4 s from the restore", got)
	}
	if got := q.Acquire(104*sec, "m", 2, 10); len(got) != 1 || got[0].First != 1 || got[0].DeliveryCount != 2 {
		t.Fatalf("restored offset 1 not acquired after its settled delay: %+v", got)
	}
	// Restored by a caller that does not settle: drawn at the restore,
	// never left waiting.
	plain := current
	plain.Settle = false
	u, err := Restore(plain, p.State(5*sec), 100*sec)
	if err != nil {
		t.Fatal(err)
	}
	if u.Unsettled(100 * sec) {
		t.Fatal("restored without Settle, a record still waits for it")
	}
	if got := u.Acquire(104*sec, "m", 2, 10); len(got) != 2 {
		t.Fatalf("restored without Settle: acquired %+v at 4 s after the restore, want offsets 0 and 1", got)
	}
}
