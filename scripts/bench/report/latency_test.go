package main

import (
	"bytes"
	"fmt"
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

// loadRuns are three runs of one load point whose median is none of the
// first run, the last run or the mean: achieved 50k/44k/45k (median 45k,
// mean 46.3k), client p99 9/2/3 ms (median 3, mean 4.67), broker total
// p99 double the client's, fsync p50 0.5/0.1/0.2 ms (median 0.2), client
// send_lag a tenth of fsync.
func loadRuns(setup string, pct int) []bench.Result {
	var out []bench.Result
	for i, v := range []struct{ ach, p99, fsync float64 }{{50_000, 9, 0.5}, {44_000, 2, 0.1}, {45_000, 3, 0.2}} {
		r := result(fmt.Sprintf("%s/load-%d/run-%d", setup, pct, i+1), 100, 50_001, v.ach, v.p99)
		r.BrokerStages = []bench.StageLatency{{Stage: "fsync", Count: 10, P50Ms: v.fsync, P99Ms: v.fsync * 10},
			{Stage: "total", Count: 10, P50Ms: v.p99, P99Ms: v.p99 * 2}}
		r.ClientStages = []bench.StageLatency{{Stage: "send_lag", Count: 10, P50Ms: v.fsync / 10, P99Ms: v.fsync}}
		out = append(out, r)
	}
	return out
}

// TestSectionLoadTableAndStages: make bench's generated section gives, per
// load point, the median and min..max of its runs (not the first, last or
// mean run), one row for a NATS point run once, and a stage table for
// each Floe setup (none for NATS, which reports no stages).
func TestSectionLoadTableAndStages(t *testing.T) {
	var results []bench.Result
	results = append(results, loadRuns("floe-rf1", 50)...)
	results = append(results, loadRuns("floe-rf3", 50)...)
	results = append(results, result("nats-r1-sync/load-50/run-1", 100, 600, 598, 7))
	r := &report{results: results}
	var b strings.Builder
	r.writeLoads(&b, "img/x.png")
	got := b.String()
	for _, want := range []string{
		// achieved median 45,000 of 44,000..50,000; client p50 is p99/4:
		// 0.750 (0.500..2.25); p99 3.00 (2.00..9.00); broker total p50 =
		// the p99s, p99 double.
		"| Floe, 1 node, RF=1 | 50% | 50,001 | 45,000 (44,000..50,000) | 0.750 (0.500..2.25) | 3.00 (2.00..9.00) | 3.00 (2.00..9.00) | 6.00 (4.00..18.0) | 3 |",
		"| Floe, 3 nodes, RF=3 | 50% | 50,001 | 45,000 (44,000..50,000) |",
		"| NATS JetStream R1 | 50% | 600 | 598 (598..598) | 1.75 (1.75..1.75) | 7.00 (7.00..7.00) | - | - | 1 |",
		"**Floe, 1 node, RF=1 (floe-rf1): broker stages, p50 / p99 in ms (median over the runs)**",
		"**Floe, 3 nodes, RF=3 (floe-rf3): broker stages, p50 / p99 in ms (median over the runs)**",
		"| fsync | 0.200 / 2.00 |", "| total | 3.00 / 6.00 |",
		"**Floe, 1 node, RF=1 (floe-rf1): client stages, p50 / p99 in ms (median over the runs)**",
		"| send_lag | 0.020 / 0.200 |",
		"![latency against offered load](img/x.png)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("section lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "(nats-r1-sync): broker stages") || strings.Contains(got, "(nats-r1-sync): client stages") {
		t.Errorf("a stage table for NATS, which has no stages:\n%s", got)
	}
	// The RF=3 target reads the median p99 of the runs (3 ms: met), not
	// the first run's 9 ms nor the mean.
	for _, v := range r.targets() {
		if strings.HasPrefix(v.target, "Floe RF=3 produce p99") && (v.outcome != "met" || !strings.Contains(v.measured, "p99 3.00 ms") ||
			!strings.Contains(v.measured, "median of 3 runs")) {
			t.Errorf("RF=3 p99 target: %+v", v)
		}
	}
}

// TestLatencyPlotShowsMediansAndSpread: the plot's points are the medians
// and its error bars reach the runs' min and max, on both axes (the axes'
// range is the bars' reach).
func TestLatencyPlotShowsMediansAndSpread(t *testing.T) {
	r := &report{results: loadRuns("floe-rf1", 50)}
	p, ok, err := r.plotLatency()
	if err != nil || !ok {
		t.Fatalf("plot: ok %v, %v", ok, err)
	}
	// x: achieved 44,000..50,000 (and a margin of 1.25×); y: p99 up to
	// 9 ms before the legend's headroom (×30).
	if p.X.Min != 44_000/1.25 || p.X.Max != 50_000*1.25 {
		t.Errorf("x range %v..%v, want the runs' 44000..50000 with a margin of 1.25×", p.X.Min, p.X.Max)
	}
	if p.Y.Max != 9*30 {
		t.Errorf("y max %v, want the worst run's p99 9 ms ×30 headroom", p.Y.Max)
	}
	group := r.loadPoints()
	if len(group) != 1 || rowOf(group[0]).ach.med != 45_000 || rowOf(group[0]).p99.med != 3 {
		t.Errorf("plotted point: %+v", rowOf(group[0]))
	}
}

func TestTicks125LabelsLessThanADecade(t *testing.T) {
	var labels []string
	for _, tk := range ticks125(110_000, 980_000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if strings.Join(labels, " ") != "200,000 500,000" {
		t.Errorf("labels %q, want 200,000 and 500,000", labels)
	}
}
