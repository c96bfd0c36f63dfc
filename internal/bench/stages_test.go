package bench

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// exposition is a broker's /metrics with the stage histogram: buckets
// 1 ms, 2 ms, 4 ms, +Inf.
func exposition(stage string, b1, b2, b4, inf float64, sum float64) string {
	return strings.Join([]string{
		`# HELP floe_produce_stage_seconds x`,
		`# TYPE floe_produce_stage_seconds histogram`,
		`floe_produce_stage_seconds_bucket{stage="` + stage + `",le="0.001"} ` + ftoa(b1),
		`floe_produce_stage_seconds_bucket{stage="` + stage + `",le="0.002"} ` + ftoa(b2),
		`floe_produce_stage_seconds_bucket{stage="` + stage + `",le="0.004"} ` + ftoa(b4),
		`floe_produce_stage_seconds_bucket{stage="` + stage + `",le="+Inf"} ` + ftoa(inf),
		`floe_produce_stage_seconds_sum{stage="` + stage + `"} ` + ftoa(sum),
		`floe_produce_stage_seconds_count{stage="` + stage + `"} ` + ftoa(inf),
		`floe_request_duration_seconds_bucket{api="Produce",le="0.001"} 99`,
		"",
	}, "\n")
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// TestStageSnapshotSinceAndQuantiles: two brokers are summed, the scrape
// at the warmup's end is subtracted, and the quantiles interpolate inside
// the buckets of what remains.
func TestStageSnapshotSinceAndQuantiles(t *testing.T) {
	before, after := newStageSnapshot(), newStageSnapshot()
	// Before: 10 observations under 1 ms on broker 1, nothing on broker 2.
	if err := before.parse(strings.NewReader(exposition("fsync", 10, 10, 10, 10, 0.005))); err != nil {
		t.Fatal(err)
	}
	// After: broker 1 gained 50 in (1,2] ms and 40 in (2,4] ms; broker 2
	// has 10 above 4 ms.
	for _, e := range []string{exposition("fsync", 10, 60, 100, 100, 0.255), exposition("fsync", 0, 0, 0, 10, 0.1)} {
		if err := after.parse(strings.NewReader(e)); err != nil {
			t.Fatal(err)
		}
	}
	got := after.since(before).latencies()
	if len(got) != 1 || got[0].Stage != "fsync" {
		t.Fatalf("got %+v, want one fsync stage", got)
	}
	s := got[0]
	if s.Count != 100 {
		t.Errorf("count %d, want 100 (110 after, 10 before)", s.Count)
	}
	// Rank 50 of 100: in (1,2] ms, which holds ranks 1..50: 2 ms.
	// Rank 90: in (2,4] ms holding 51..90: 4 ms. Rank 99: in +Inf: the
	// largest finite bound, 4 ms.
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"p50", s.P50Ms, 2}, {"p90", s.P90Ms, 4}, {"p99", s.P99Ms, 4}, {"mean", s.MeanMs, 3.5}} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %v ms, want %v", c.name, c.got, c.want)
		}
	}
	h := after.since(before).stages["fsync"]
	if q := h.quantile(0.25); math.Abs(q-0.0015) > 1e-12 {
		t.Errorf("p25 = %v s, want 0.0015 (halfway through the (1,2] ms bucket)", q)
	}
}

// TestStageSnapshotOrderAndErrors: stages come out in pipeline order
// whatever the exposition's order; a malformed histogram line is an error.
func TestStageSnapshotOrderAndErrors(t *testing.T) {
	s := newStageSnapshot()
	for _, st := range []string{"total", "append", "socket_read"} {
		if err := s.parse(strings.NewReader(exposition(st, 1, 1, 1, 1, 0.001))); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, l := range s.latencies() {
		names = append(names, l.Stage)
	}
	if strings.Join(names, ",") != "socket_read,append,total" {
		t.Errorf("order %v, want socket_read,append,total", names)
	}
	for _, bad := range []string{
		`floe_produce_stage_seconds_bucket{stage="fsync",le="x"} 1`,
		`floe_produce_stage_seconds_bucket{le="0.1"} 1`,
		`floe_produce_stage_seconds_sum{stage="fsync"} nope`,
	} {
		if err := newStageSnapshot().parse(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed without an error", bad)
		}
	}
	if metricsURL("127.0.0.1:9644") != "http://127.0.0.1:9644/metrics" || metricsURL("https://h/m") != "https://h/m" {
		t.Error("metricsURL")
	}
}
