package bench

import (
	"testing"
	"time"
)

func TestPacerSchedule(t *testing.T) {
	start := time.Unix(1000, 0)
	p := newPacer(start, 1000, 1<<20) // one message per millisecond
	if n := p.due(start.Add(-time.Second)); n != 0 {
		t.Fatalf("before start: %d due", n)
	}
	if n := p.due(start); n != 1 {
		t.Fatalf("at start: %d due, want 1 (message 0 is due at start)", n)
	}
	if got := p.next(); !got.Equal(start) {
		t.Fatalf("message 0 scheduled at %v", got)
	}
	if w := p.wait(start); w != time.Millisecond {
		t.Fatalf("wait %v, want 1ms", w)
	}
	// 10.5 ms in: messages 1..10 are due.
	now := start.Add(10*time.Millisecond + 500*time.Microsecond)
	if n := p.due(now); n != 10 {
		t.Fatalf("%d due, want 10", n)
	}
	var last time.Time
	for range 10 {
		last = p.next()
	}
	if want := start.Add(10 * time.Millisecond); !last.Equal(want) {
		t.Fatalf("message 10 at %v, want %v", last, want)
	}
	if n := p.due(now); n != 0 {
		t.Fatalf("%d still due after issuing", n)
	}
	if w := p.wait(now); w != 500*time.Microsecond {
		t.Fatalf("wait %v, want 500µs", w)
	}
}

func TestPacerBurstCapAndCatchUp(t *testing.T) {
	start := time.Unix(0, 0)
	p := newPacer(start, 1e6, 100)
	now := start.Add(time.Second) // one million due
	var total int64
	for n := p.due(now); n > 0; n = p.due(now) {
		if n > 100 {
			t.Fatalf("burst of %d over cap", n)
		}
		for range n {
			p.next()
		}
		total += n
	}
	if total != 1_000_001 {
		t.Fatalf("issued %d by 1s at 1M/s, want 1000001", total)
	}
	if p.wait(now) <= 0 {
		t.Fatal("caught up, the next message must be in the future")
	}
}
