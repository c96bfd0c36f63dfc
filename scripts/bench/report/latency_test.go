package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/floe-broker/floe/internal/bench"
)

// TestLatencyMedianAndSpread: runs of one point are grouped by label, the
// table gives their median and min..max, points come in rising load per
// setup, and the stage table takes the median of the runs' stage p50/p99.
func TestLatencyMedianAndSpread(t *testing.T) {
	withStages := func(r bench.Result, fsync50, fsync99 float64) bench.Result {
		r.BrokerStages = []bench.StageLatency{{Stage: "fsync", Count: 10, P50Ms: fsync50, P99Ms: fsync99},
			{Stage: "total", Count: 10, P50Ms: fsync50 * 2, P99Ms: fsync99 * 2}}
		return r
	}
	results := []bench.Result{
		result("floe-rf3/max", 100, 0, 90_000, 500),
		withStages(result("floe-rf3/load-50/run-1", 100, 45_001, 44_000, 40), 3, 30),
		withStages(result("floe-rf3/load-10/run-1", 100, 9_001, 9_000, 8), 1, 10),
		withStages(result("floe-rf3/load-50/run-2", 100, 45_001, 45_000, 20), 2, 20),
		withStages(result("floe-rf3/load-50/run-3", 100, 45_001, 43_000, 100), 5, 50),
		result("floe-rf1/load-90/run-1", 100, 1000, 990, 4),
	}
	var out bytes.Buffer
	if err := writeLatency(results, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	lines := strings.Split(got, "\n")
	var rows []string
	for _, l := range lines {
		if strings.HasPrefix(l, "| floe-") {
			rows = append(rows, l)
		}
	}
	if len(rows) != 3 {
		t.Fatalf("rows %q, want 3 points (the max run is not a point)", rows)
	}
	// Setup order as first seen, loads rising within a setup.
	if !strings.HasPrefix(rows[0], "| floe-rf3 | 10% |") || !strings.HasPrefix(rows[1], "| floe-rf3 | 50% |") ||
		!strings.HasPrefix(rows[2], "| floe-rf1 | 90% |") {
		t.Fatalf("row order:\n%s", strings.Join(rows, "\n"))
	}
	// 50%: achieved 43k/44k/45k -> 44,000 (43,000..45,000); p99 20/40/100
	// -> 40 (20.0..100); broker total p99 40/60/100 -> 60.0 (40.0..100).
	for _, want := range []string{"44,000 (43,000..45,000)", "| 40.0 (20.0..100) |", "| 60.0 (40.0..100) |", "| 3 |"} {
		if !strings.Contains(rows[1], want) {
			t.Errorf("50%% row %q lacks %q", rows[1], want)
		}
	}
	// Stage table: fsync p50 medians 1 (10%) and 3 (50%); p99 10 and 30.
	if !strings.Contains(got, "| fsync | 1.00 / 10.0 | 3.00 / 30.0 |") {
		t.Errorf("stage table:\n%s", got)
	}
	// A run without broker stages shows none.
	if !strings.HasSuffix(rows[2], "| - | - | 1 |") {
		t.Errorf("rf1 row without stages: %q", rows[2])
	}
	if err := writeLatency(results[:1], &out); err == nil {
		t.Error("no points, no error")
	}
}

func TestSpreadOfEven(t *testing.T) {
	if s := spreadOf([]float64{4, 1, 3, 2}); s.med != 2.5 || s.lo != 1 || s.hi != 4 {
		t.Errorf("spread %+v, want median 2.5 over 1..4", s)
	}
}
