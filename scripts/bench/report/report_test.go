package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floe-broker/floe/internal/bench"
)

func result(label string, size int, offered, msgsPerSec, p99 float64) bench.Result {
	return bench.Result{Tool: "kafka", Mode: bench.ModeProduce, Label: label, MessageBytes: size, OfferedPerSec: offered,
		Produce: &bench.Side{Messages: 1000, MsgsPerSec: msgsPerSec, MBPerSec: msgsPerSec * float64(size) / 1e6,
			Latency: &bench.Latency{Count: 1000, P50Ms: p99 / 4, P95Ms: p99 / 2, P99Ms: p99, P999Ms: p99 * 2, MaxMs: p99 * 3}}}
}

func TestTargetsSayByHowMuch(t *testing.T) {
	r := &report{results: []bench.Result{
		result("floe-rf1", 100, 0, 400_000, 50),
		result("floe-rf3", 100, 0, 450_000, 80),
		result("floe-rf3/load-50", 100, 225_000, 225_000, 12.5),
		result("nats-r1-sync", 100, 0, 1_000, 900),
	}, failures: [][2]string{{"nats-r3-sync", "create stream: no servers"}}}
	got := map[string]verdict{}
	for _, v := range r.targets() {
		got[v.target] = v
	}
	want := map[string]string{
		"Floe RF=1 ≥ 1,000,000 msg/s":                             "**not met**: 40% of the target (2.5× short)",
		"Floe RF=3 ≥ 300,000 msg/s":                               "met",
		"Floe RF=3 produce p99 ≤ 5 ms at half the maximum":        "**not met**: 2.5× the target",
		"Floe ≥ 10× NATS JetStream, fsync per write (RF=1 vs R1)": "met",
		"Floe ≥ 10× NATS JetStream, fsync per write (RF=3 vs R3)": "**not met**: a run is missing",
	}
	for target, outcome := range want {
		v, ok := got[target]
		if !ok || v.outcome != outcome {
			t.Errorf("%s: got %+v, want outcome %q", target, v, outcome)
		}
	}
	if v := got["Floe ≥ 10× NATS JetStream, fsync per write (RF=1 vs R1)"]; v.measured != "400.0× (400,000 vs 1,000 msg/s)" {
		t.Errorf("ratio measured as %q", v.measured)
	}
}

func TestWriteProducesSectionAndPlots(t *testing.T) {
	dir := t.TempDir()
	var lines bytes.Buffer
	enc := json.NewEncoder(&lines)
	for _, r := range []bench.Result{
		result("floe-rf1", 100, 0, 900_000, 40),
		result("floe-rf1/size-100", 100, 0, 800_000, 40),
		result("floe-rf1/size-10000", 10000, 0, 20_000, 60),
		result("floe-rf1/load-50/run-1", 100, 450_000, 449_000, 3),
		result("floe-rf1/load-50/run-2", 100, 450_000, 440_000, 5),
		result("floe-rf1/load-90/run-1", 100, 810_000, 700_000, 300),
		result("nats-r1-sync/size-100", 100, 0, 600, 1000),
		result("nats-r1-sync/load-50", 100, 300, 300, 4),
	} {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"results.jsonl": lines.String(),
		"failures.tsv":  "floe-rf3\tconnection refused\n",
		"machine.json":  `{"nproc": 2, "cpu": "Test CPU", "mem_gib": 4, "kernel": "Linux 6", "disk": "/dev/x", "go": "go1.26", "commit": "abc", "date": "today"}`,
		"disk.json":     `{"dsync_1m_mb_per_sec": 200, "fdatasync_stream_mb_per_sec": 600, "dsync_4k_writes_per_sec": 400, "commands": ["dd a", "dd b", "dd c"]}`,
		"commands.tsv":  "floe-rf1\tbin/floe bench produce --size 100\n",
		"benchmarks.md": "# Benchmarks\n\n## logstore\n\nkeep me\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	doc := filepath.Join(dir, "benchmarks.md")
	err := write([]string{"--results", filepath.Join(dir, "results.jsonl"), "--failures", filepath.Join(dir, "failures.tsv"),
		"--machine", filepath.Join(dir, "machine.json"), "--disk", filepath.Join(dir, "disk.json"), "--profiles", dir,
		"--doc", doc, "--img", filepath.Join(dir, "img"), "--settings", "quick", "--elapsed", "42"})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(doc)
	for _, want := range []string{
		"## logstore\n\nkeep me", sectionHeading, "Test CPU", "| 900,000 |", "failed: connection refused",
		"](img/" + plotThroughputFile + ")", "](img/" + plotLatencyFile + ")", "bin/floe bench produce --size 100",
		"**not met**: 90% of the target", "| 10,000 | 20,000 msg/s, 200.0 MB/s |",
		"| Floe, 1 node, RF=1 | 50% | 450,000 | 444,500 (440,000..449,000) |",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("doc lacks %q", want)
		}
	}
	for _, name := range []string{plotThroughputFile, plotLatencyFile} {
		b, err := os.ReadFile(filepath.Join(dir, "img", name))
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s: not a PNG (%v)", name, err)
		}
	}
}

func TestMaxRateOfMissingRunIsZero(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.jsonl")
	b, _ := json.Marshal(result("floe-rf1", 100, 0, 123_456.7, 1))
	os.WriteFile(path, append(b, '\n'), 0o644)
	for label, want := range map[string]string{"floe-rf1": "123457\n", "floe-rf3": "0\n"} {
		var out bytes.Buffer
		if err := maxRate([]string{"--results", path, "--label", label}, &out); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("%s: %q, want %q", label, out.String(), want)
		}
	}
}
