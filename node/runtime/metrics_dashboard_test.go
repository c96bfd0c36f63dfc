package runtime

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const dashboardPath = "../../docs/grafana/floe.json"

// dashboardQueries returns every PromQL expression of the dashboard: the
// panels' targets and the query variables.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	var out []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			out = append(out, q)
		}
	}
	return out
}

var (
	promStrings   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promMatchers  = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promGrouping  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promLabelVals = regexp.MustCompile(`label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,[^)]*\)`)
	promIdent     = regexp.MustCompile(`\$?[a-zA-Z_:][a-zA-Z0-9_:]*\s*\(?`)
	promKeywords  = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true}
)

// metricNames returns the metric names a PromQL expression selects:
// identifiers left once strings, label matchers, ranges and groupings are
// cut out, that are neither functions (followed by a parenthesis),
// keywords nor dashboard variables. label_values(metric, label) names its
// metric.
func metricNames(expr string) []string {
	var names []string
	for _, m := range promLabelVals.FindAllStringSubmatch(expr, -1) {
		names = append(names, m[1])
	}
	e := promLabelVals.ReplaceAllString(expr, " ")
	e = promStrings.ReplaceAllString(e, " ")
	e = promMatchers.ReplaceAllString(e, " ")
	e = promGrouping.ReplaceAllString(e, " ")
	for _, tok := range promIdent.FindAllString(e, -1) {
		if strings.HasPrefix(tok, "$") || strings.HasSuffix(tok, "(") {
			continue
		}
		if tok = strings.TrimSpace(tok); !promKeywords[tok] {
			names = append(names, tok)
		}
	}
	return names
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string]string{
		`sum by (api) (rate(floe_requests_total{instance=~"$instance"}[$__rate_interval]))`:                    "floe_requests_total",
		`histogram_quantile(0.99, sum by (api, le) (rate(floe_request_duration_seconds_bucket{a="b,c"}[5m])))`: "floe_request_duration_seconds_bucket",
		`sum by (topic) (kafka_topic_partition_current_offset - kafka_topic_partition_oldest_offset)`:          "kafka_topic_partition_current_offset kafka_topic_partition_oldest_offset",
		`label_values(floe_requests_total, instance)`:                                                          "floe_requests_total",
		`a_total / on(x) group_left(y) b_total and c`:                                                          "a_total b_total c",
	} {
		if got := strings.Join(metricNames(expr), " "); got != want {
			t.Errorf("metricNames(%s) = %q, want %q", expr, got, want)
		}
	}
}

// The Grafana dashboard in docs/grafana queries only metrics a live
// broker exports: after a produce, a fetch and a group's commit, every
// metric it names has at least one series on /metrics. The new
// per-partition, Raft and kafka_exporter-named series carry the values
// that traffic implies.
func TestDashboardMetricsExist(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real broker")
	}
	b := startBroker(t, t.TempDir())
	defer b.Shutdown(context.Background())
	waitReady(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cl := client(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "dash"); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	for i := range 5 {
		r := &kgo.Record{Topic: "dash", Partition: 0, Value: []byte{byte(i)}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	fetched := consumeAll(t, ctx, b, "dash", 5)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "dash", Partition: 0, At: 3, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, "dash-group", offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}

	// The commit created __consumer_offsets: wait for its partitions'
	// leaders, so the figures below are of a settled cluster.
	fams := scrape(t, b)
	for v, _ := value(fams["floe_partitions_leaderless"], nil); v != 0; v, _ = value(fams["floe_partitions_leaderless"], nil) {
		if ctx.Err() != nil {
			t.Fatalf("%v partitions still leaderless", v)
		}
		time.Sleep(20 * time.Millisecond)
		fams = scrape(t, b)
	}
	exprs := dashboardQueries(t)
	seen := map[string]bool{}
	for _, e := range exprs {
		names := metricNames(e)
		if len(names) == 0 {
			t.Errorf("query %q names no metric", e)
		}
		for _, n := range names {
			seen[n] = true
		}
	}
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) < 20 {
		t.Errorf("the dashboard queries %d metrics: %v", len(names), names)
	}
	for _, n := range names {
		if f := familyOf(fams, n); f == nil || len(f.Metric) == 0 {
			t.Errorf("the dashboard queries %s, which the broker does not export", n)
		}
	}

	p0 := map[string]string{"topic": "dash", "partition": "0"}
	grp := map[string]string{"consumergroup": "dash-group", "topic": "dash", "partition": "0"}
	for _, c := range []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{"floe_partition_records_in_total", p0, 5},
		{"floe_partition_records_out_total", p0, float64(fetched)},
		{"kafka_topic_partition_current_offset", p0, 5},
		{"kafka_topic_partition_oldest_offset", p0, 0},
		{"kafka_topic_partition_leader", p0, 1},
		{"kafka_topic_partition_replicas", p0, 1},
		{"kafka_topic_partition_in_sync_replica", p0, 1},
		{"kafka_topic_partition_under_replicated_partition", p0, 0},
		{"kafka_consumergroup_current_offset", grp, 3},
		{"kafka_consumergroup_lag", grp, 2},
		{"kafka_consumergroup_lag_sum", map[string]string{"consumergroup": "dash-group", "topic": "dash"}, 2},
		{"kafka_consumergroup_members", map[string]string{"consumergroup": "dash-group"}, 0},
		{"kafka_topic_partitions", map[string]string{"topic": "dash"}, 2},
		{"kafka_brokers", nil, 1},
		{"floe_partitions_under_replicated", nil, 0},
		{"floe_partitions_leaderless", nil, 0},
	} {
		if v, ok := value(fams[c.family], c.labels); !ok || v != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.family, c.labels, v, ok, c.want)
		}
	}
	if v, _ := value(fams["floe_partition_bytes_in_total"], p0); v <= 0 {
		t.Errorf("floe_partition_bytes_in_total = %v", v)
	}
	if v, _ := value(fams["floe_partition_raft_term"], p0); v < 1 {
		t.Errorf("floe_partition_raft_term = %v, want a term", v)
	}
	if v, _ := value(fams["floe_raft_leaderships_won_total"], nil); v < 2 {
		t.Errorf("floe_raft_leaderships_won_total = %v, want the controller's and the partitions'", v)
	}
}

// consumeAll reads partition 0 of topic from the start until it has want
// records, and returns how many it got.
func consumeAll(t *testing.T, ctx context.Context, b *Broker, topic string, want int) int {
	t.Helper()
	cons := client(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	defer cons.Close()
	got := 0
	for got < want {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", got, want, err)
		}
		fs.EachRecord(func(*kgo.Record) { got++ })
	}
	return got
}

// familyOf finds the family a sample name belongs to (a histogram's
// _bucket, _sum and _count series are its family's).
func familyOf(fams map[string]*dto.MetricFamily, name string) *dto.MetricFamily {
	if f, ok := fams[name]; ok {
		return f
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if f, ok := fams[strings.TrimSuffix(name, suffix)]; ok && strings.HasSuffix(name, suffix) && f.GetType() == dto.MetricType_HISTOGRAM {
			return f
		}
	}
	return nil
}
