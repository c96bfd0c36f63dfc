package quota

import (
	"math"
	"math/rand"
	"testing"
	"time"
)

// naive is a second statement of Kafka's sampled rate, written from its
// description rather than from rate.go: a list of windows in the order
// they were opened (at most Samples; opening one drops the first), an
// event at or after its window's start + Window opening the next window at
// the event's time; measuring at now first restarts, in place and empty,
// every window that began Samples windows or more before now, then
// divides the sum by max(now - earliest start, padded to Samples-1 whole
// windows plus the part elapsed, 1 ms).
type naive struct {
	cfg  Config
	wins []naiveWin
}

type naiveWin struct {
	start time.Time
	sum   float64
}

func (m *naive) record(v float64, t time.Time) {
	if len(m.wins) == 0 {
		m.wins = append(m.wins, naiveWin{start: t})
	}
	if last := m.wins[len(m.wins)-1]; t.Sub(last.start) >= m.cfg.Window {
		m.wins = append(m.wins, naiveWin{start: t})
		if len(m.wins) > m.cfg.Samples {
			m.wins = m.wins[1:]
		}
	}
	m.wins[len(m.wins)-1].sum += v
}

func (m *naive) windowSize(now time.Time) time.Duration {
	for i := range m.wins {
		if now.Sub(m.wins[i].start) >= time.Duration(m.cfg.Samples)*m.cfg.Window {
			m.wins[i] = naiveWin{start: now}
		}
	}
	earliest := now
	for _, w := range m.wins {
		if w.start.Before(earliest) {
			earliest = w.start
		}
	}
	elapsed := now.Sub(earliest)
	if full := int(elapsed / m.cfg.Window); full < m.cfg.Samples-1 {
		elapsed += time.Duration(m.cfg.Samples-1-full) * m.cfg.Window
	}
	return max(elapsed, time.Millisecond)
}

func (m *naive) measure(now time.Time) float64 {
	ws := m.windowSize(now)
	sum := 0.0
	for _, w := range m.wins {
		sum += w.sum
	}
	return sum / ws.Seconds()
}

// throttle is Kafka's formula, in milliseconds.
func (m *naive) throttle(bound float64, now time.Time) time.Duration {
	rate := m.measure(now)
	if rate <= bound {
		return 0
	}
	ms := math.Round((rate - bound) / bound * float64(m.windowSize(now).Milliseconds()))
	return time.Duration(ms) * time.Millisecond
}

func TestRateMatchesNaiveModel(t *testing.T) {
	for seed := int64(1); seed <= 100; seed++ {
		rng := rand.New(rand.NewSource(seed))
		cfg := Config{Samples: 2 + rng.Intn(12), Window: time.Duration(1+rng.Intn(1000)) * time.Millisecond}
		r, m := NewRate(cfg), &naive{cfg: cfg}
		now := time.Unix(1_700_000_000, 0)
		step := func() time.Duration {
			if rng.Intn(20) == 0 { // now and then a long pause: windows expire
				return time.Duration(rng.Int63n(int64(cfg.Samples+2) * int64(cfg.Window)))
			}
			return time.Duration(rng.Int63n(int64(cfg.Window)))
		}
		for i := 0; i < 300; i++ {
			now = now.Add(step()).Truncate(time.Millisecond) // Kafka's clock is in ms
			v := float64(rng.Intn(10_000))
			r.Record(v, now)
			m.record(v, now)
			now = now.Add(step()).Truncate(time.Millisecond)
			got, want := r.Measure(now), m.measure(now)
			if math.Abs(got-want) > 1e-6*math.Max(1, want) {
				t.Fatalf("seed %d step %d (cfg %+v): rate %v, naive model %v", seed, i, cfg, got, want)
			}
			bound := float64(1 + rng.Intn(20_000))
			if got, want := r.Throttle(bound, now), m.throttle(bound, now); got != want {
				t.Fatalf("seed %d step %d (cfg %+v): throttle against %v: %v, naive model %v", seed, i, cfg, bound, got, want)
			}
		}
	}
}

func TestRateFirstBurstUsesFullWindow(t *testing.T) {
	r := NewRate(Config{})
	now := time.Unix(100, 0)
	r.Record(1000, now)
	// 1000 bytes over at least 10 whole windows of 1 s: 100 bytes/s.
	if got := r.Measure(now); got != 100 {
		t.Fatalf("rate %v, want 100", got)
	}
	if d := r.Throttle(100, now); d != 0 {
		t.Fatalf("throttle at the bound %v, want 0", d)
	}
	// Bound 50: (100-50)/50 * 10 s = 10 s.
	if d := r.Throttle(50, now); d != 10*time.Second {
		t.Fatalf("throttle %v, want 10s", d)
	}
	if d := r.Throttle(0, now); d != 0 {
		t.Fatalf("no bound: throttle %v", d)
	}
}

func TestRateExpires(t *testing.T) {
	r := NewRate(Config{Samples: 3, Window: time.Second})
	now := time.Unix(100, 0)
	r.Record(600, now)
	if r.Idle(now) {
		t.Fatal("idle right after a record")
	}
	later := now.Add(3 * time.Second)
	if got := r.Measure(later); got != 0 {
		t.Fatalf("rate after every sample expired: %v", got)
	}
	if !r.Idle(later) {
		t.Fatal("not idle after every sample expired")
	}
}

func TestThrottleCapped(t *testing.T) {
	r := NewRate(Config{Samples: 11, Window: time.Second})
	now := time.Unix(100, 0)
	if d := r.RecordAndThrottle(1e15, 1, now); d != MaxThrottle {
		t.Fatalf("throttle %v, want the int32 cap %v", d, MaxThrottle)
	}
}

// A client that sends as fast as it may, waiting out every throttle it
// gets, ends up at the bound: within 10% over a long run, whatever its
// request size.
func TestObedientClientConvergesToBound(t *testing.T) {
	for _, size := range []float64{1_000, 10_000, 100_000} {
		const bound = 50_000.0
		r := NewRate(Config{})
		start := time.Unix(1000, 0)
		now, total := start, 0.0
		for now.Sub(start) < 120*time.Second {
			d := r.RecordAndThrottle(size, bound, now)
			total += size
			now = now.Add(d + time.Millisecond) // 1 ms per request at best
		}
		got := total / now.Sub(start).Seconds()
		if got > bound*1.1 || got < bound*0.9 {
			t.Errorf("request size %v: achieved %.0f B/s against a bound of %.0f", size, got, bound)
		}
	}
}

func TestUnrecord(t *testing.T) {
	r := NewRate(Config{})
	now := time.Unix(100, 0)
	r.Record(500, now)
	r.Record(700, now)
	r.Unrecord(700, now)
	if got := r.Measure(now); got != 50 {
		t.Fatalf("rate %v, want 50", got)
	}
}

// The lower bound the end-to-end test relies on (cmd/floe/itest
// quotas_test.go): a client that waits out every throttle, with up to k
// requests of size bytes read before the throttle is known (one burst),
// has sent at most 1.25*bound*(T + Samples*Window) + burst bytes by time
// T. It holds when a burst is well within what the sampled span allows
// (a quarter of bound*(Samples-1)*Window here): a burst whose throttle
// outlasts every sample is forgotten by the next request, since Kafka's
// rate only remembers Samples windows, and throttles of a few
// milliseconds lose up to half a millisecond each to rounding.
func TestThrottledBytesBound(t *testing.T) {
	for seed := int64(1); seed <= 400; seed++ {
		rng := rand.New(rand.NewSource(seed))
		cfg := Config{Samples: 2 + rng.Intn(12), Window: time.Duration(100+rng.Intn(1000)) * time.Millisecond}
		bound := float64(10_000 + rng.Intn(1_000_000))
		k := 1 + rng.Intn(5)
		size := float64(1000 + rng.Intn(100_000))
		if burstMax := bound * float64(cfg.Samples-1) * cfg.Window.Seconds() / 4; float64(k)*size > burstMax {
			size = burstMax / float64(k)
		}
		r := NewRate(cfg)
		start := time.Unix(1000, 0)
		now, total := start, 0.0
		for now.Sub(start) < 60*time.Second {
			var d time.Duration
			for i := 0; i < k; i++ { // k requests read together
				d = max(d, r.RecordAndThrottle(size, bound, now))
				total += size
			}
			limit := 1.25*bound*(now.Sub(start)+time.Duration(cfg.Samples)*cfg.Window).Seconds() + float64(k)*size
			if total > limit {
				t.Fatalf("seed %d (cfg %+v, bound %v, size %v, k %d): %v bytes by %v, more than %v",
					seed, cfg, bound, size, k, total, now.Sub(start), limit)
			}
			now = now.Add(d + time.Duration(rng.Intn(5))*time.Millisecond)
		}
	}
}

// BenchmarkRecordAndThrottle is what one throttled request costs.
func BenchmarkRecordAndThrottle(b *testing.B) {
	r := NewRate(Config{})
	now := time.Unix(1000, 0)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		now = now.Add(time.Millisecond)
		r.RecordAndThrottle(1000, 1e6, now)
	}
}
