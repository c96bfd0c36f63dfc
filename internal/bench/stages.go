package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The broker's side of a produce's latency (issue 21): Floe brokers export
// floe_produce_stage_seconds, a histogram per stage of a produce request
// (node/runtime/stages.go). With --broker-metrics, a run scrapes every
// broker's /metrics when the warmup ends and again after the last
// acknowledgement, subtracts, sums over the brokers and reports each
// stage's quantiles next to the client's latency.

// stageMetric is the histogram's name on /metrics.
const stageMetric = "floe_produce_stage_seconds"

// StageLatency is one stage's distribution over a run, from the brokers'
// histograms. Quantiles are interpolated within the histogram's buckets
// (factor √2 apart), as Prometheus' histogram_quantile does.
type StageLatency struct {
	Stage  string  `json:"stage"`
	Count  uint64  `json:"count"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MeanMs float64 `json:"mean_ms"`
}

// stageHist is one stage's cumulative buckets (upper bound in seconds to
// count) with its sum and count.
type stageHist struct {
	buckets map[float64]float64
	sum     float64
	count   float64
}

// stageSnapshot is the stage histograms of one or more scrapes, summed, by
// stage, with the stage order of the first exposition.
type stageSnapshot struct {
	stages map[string]*stageHist
	order  []string
}

func newStageSnapshot() *stageSnapshot { return &stageSnapshot{stages: map[string]*stageHist{}} }

func (s *stageSnapshot) hist(stage string) *stageHist {
	h, ok := s.stages[stage]
	if !ok {
		h = &stageHist{buckets: map[float64]float64{}}
		s.stages[stage] = h
		s.order = append(s.order, stage)
	}
	return h
}

// parseStages adds the stage histograms of one Prometheus text exposition
// to s. Other metrics are skipped; a malformed line of the histogram is
// an error.
func (s *stageSnapshot) parse(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, stageMetric)
		if !ok {
			continue
		}
		var kind string
		switch {
		case strings.HasPrefix(rest, "_bucket{"):
			kind, rest = "bucket", rest[len("_bucket{"):]
		case strings.HasPrefix(rest, "_sum{"):
			kind, rest = "sum", rest[len("_sum{"):]
		case strings.HasPrefix(rest, "_count{"):
			kind, rest = "count", rest[len("_count{"):]
		default:
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			return fmt.Errorf("%s: malformed line %q", stageMetric, line)
		}
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err != nil {
			return fmt.Errorf("%s: value in %q: %v", stageMetric, line, err)
		}
		lv := parseLabels(labels)
		stage := lv["stage"]
		if stage == "" {
			return fmt.Errorf("%s: no stage label in %q", stageMetric, line)
		}
		h := s.hist(stage)
		switch kind {
		case "bucket":
			le, err := strconv.ParseFloat(lv["le"], 64)
			if lv["le"] == "+Inf" {
				le, err = math.Inf(1), nil
			}
			if err != nil {
				return fmt.Errorf("%s: le in %q: %v", stageMetric, line, err)
			}
			h.buckets[le] += v
		case "sum":
			h.sum += v
		case "count":
			h.count += v
		}
	}
	return sc.Err()
}

// parseLabels reads `a="x",b="y"` (values without escaped quotes, as the
// stage and le labels are).
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		if ok {
			out[strings.TrimSpace(k)] = strings.Trim(v, `"`)
		}
	}
	return out
}

// since returns the observations in s that were not yet in before.
func (s *stageSnapshot) since(before *stageSnapshot) *stageSnapshot {
	out := newStageSnapshot()
	for _, name := range s.order {
		h, d := s.stages[name], out.hist(name)
		b := before.stages[name]
		if b == nil {
			b = &stageHist{buckets: map[float64]float64{}}
		}
		for le, v := range h.buckets {
			d.buckets[le] = v - b.buckets[le]
		}
		d.sum, d.count = h.sum-b.sum, h.count-b.count
	}
	return out
}

// quantile interpolates the q-quantile (0..1) in seconds from cumulative
// buckets; the first bucket starts at 0, and a quantile in the +Inf
// bucket is the largest finite bound.
func (h *stageHist) quantile(q float64) float64 {
	if h.count <= 0 {
		return 0
	}
	les := make([]float64, 0, len(h.buckets))
	for le := range h.buckets {
		les = append(les, le)
	}
	sort.Float64s(les)
	rank := q * h.count
	prevLe, prevCount := 0.0, 0.0
	for _, le := range les {
		c := h.buckets[le]
		if c >= rank && c > prevCount {
			if math.IsInf(le, 1) {
				return prevLe
			}
			return prevLe + (le-prevLe)*(rank-prevCount)/(c-prevCount)
		}
		if !math.IsInf(le, 1) {
			prevLe = le
		}
		prevCount = c
	}
	return prevLe
}

// stageOrder is the order a produce goes through the broker's stages
// (node/runtime/stages.go); the exposition lists them alphabetically.
var stageOrder = []string{"socket_read", "reactor_wait", "validate", "append", "fsync_wait", "fsync",
	"replication", "reactor_rest", "response", "total"}

// latencies summarizes every stage with observations, in stageOrder (any
// other stage after them).
func (s *stageSnapshot) latencies() []StageLatency {
	rank := func(name string) int {
		for i, n := range stageOrder {
			if n == name {
				return i
			}
		}
		return len(stageOrder)
	}
	names := append([]string(nil), s.order...)
	sort.SliceStable(names, func(i, j int) bool { return rank(names[i]) < rank(names[j]) })
	var out []StageLatency
	for _, name := range names {
		h := s.stages[name]
		if h.count <= 0 {
			continue
		}
		out = append(out, StageLatency{Stage: name, Count: uint64(h.count),
			P50Ms: h.quantile(0.5) * 1e3, P90Ms: h.quantile(0.9) * 1e3, P99Ms: h.quantile(0.99) * 1e3,
			MeanMs: h.sum / h.count * 1e3})
	}
	return out
}

// metricsURL turns host:port into http://host:port/metrics; a full URL is
// kept.
func metricsURL(addr string) string {
	if strings.Contains(addr, "://") {
		return addr
	}
	return "http://" + addr + "/metrics"
}

// scrapeStages fetches and sums the stage histograms of every broker.
func scrapeStages(ctx context.Context, addrs []string) (*stageSnapshot, error) {
	s := newStageSnapshot()
	client := &http.Client{Timeout: 10 * time.Second}
	for _, a := range addrs {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL(a), nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("broker metrics: %w", err)
		}
		err = s.parse(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("broker metrics %s: %s", metricsURL(a), resp.Status)
		}
		if err != nil {
			return nil, fmt.Errorf("broker metrics %s: %w", metricsURL(a), err)
		}
	}
	return s, nil
}

// writeStages prints a run's stage table under title (the client's or the
// brokers' stages); nothing when there are none.
func writeStages(w io.Writer, title string, stages []StageLatency) {
	if len(stages) == 0 {
		return
	}
	fmt.Fprintf(w, "  %s:\n", title)
	fmt.Fprintf(w, "           %-13s %8s %8s %8s %8s %8s\n", "stage", "count", "p50", "p90", "p99", "mean")
	for _, s := range stages {
		fmt.Fprintf(w, "           %-13s %8d %8s %8s %8s %8s\n", s.Stage, s.Count,
			FormatMs(s.P50Ms), FormatMs(s.P90Ms), FormatMs(s.P99Ms), FormatMs(s.MeanMs))
	}
}
