package check

import "testing"

// BenchmarkCheck runs every checker on a generated history of about the
// size a 10-minute Docker run records.
func BenchmarkCheck(b *testing.B) {
	cfg := defaultGen(1)
	cfg.steps, cfg.infoPct, cfg.producers = 60_000, 3, 8
	h := newGen(cfg).run()
	b.ReportMetric(float64(len(h)), "events")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if rep := Check(h, Options{}); rep.Valid != Valid {
			b.Fatalf("clean history judged %s:\n%s", rep.Valid, rep.Summary())
		}
	}
}

func TestBigHistoryValid(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	cfg := defaultGen(2)
	cfg.steps, cfg.infoPct = 8_000, 10
	h := newGen(cfg).run()
	mustValid(t, h, Options{})
}
