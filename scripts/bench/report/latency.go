package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/floe-broker/floe/internal/bench"
)

// latency prints the latency-against-load tables of scripts/bench/latency.sh
// (issue 21) as Markdown: runs labelled SETUP/load-PCT/run-N, each point
// repeated; per point the median of the runs and their range (min..max),
// for the client's figures and for every broker stage.
func latency(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("latency", flag.ContinueOnError)
	path := fs.String("results", "", "results file (JSON lines)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := os.Open(*path)
	if err != nil {
		return err
	}
	defer f.Close()
	results, err := readResults(f)
	if err != nil {
		return err
	}
	return writeLatency(results, out)
}

// point is the runs of one setup at one load.
type point struct {
	setup string
	pct   int
	runs  []bench.Result
}

// groupPoints collects SETUP/load-PCT/run-N results (and SETUP/load-PCT, a
// point run once), in first-seen setup order and rising load.
func groupPoints(results []bench.Result) []*point {
	var out []*point
	byKey := map[string]*point{}
	var setups []string
	for _, r := range results {
		parts := strings.Split(r.Label, "/")
		if len(parts) < 2 || len(parts) > 3 || !strings.HasPrefix(parts[1], "load-") ||
			(len(parts) == 3 && !strings.HasPrefix(parts[2], "run-")) {
			continue
		}
		pct, err := strconv.Atoi(strings.TrimPrefix(parts[1], "load-"))
		if err != nil {
			continue
		}
		key := parts[0] + "/" + parts[1]
		p := byKey[key]
		if p == nil {
			p = &point{setup: parts[0], pct: pct}
			byKey[key] = p
			out = append(out, p)
			if !slices.Contains(setups, parts[0]) {
				setups = append(setups, parts[0])
			}
		}
		p.runs = append(p.runs, r)
	}
	slices.SortStableFunc(out, func(a, b *point) int {
		if c := slices.Index(setups, a.setup) - slices.Index(setups, b.setup); c != 0 {
			return c
		}
		return a.pct - b.pct
	})
	return out
}

// spread is the median and range of some runs' values; n is how many.
type spread struct {
	med, lo, hi float64
	n           int
}

func spreadOf(vs []float64) spread {
	if len(vs) == 0 {
		return spread{}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{med, s[0], s[len(s)-1], len(s)}
}

func (s spread) ms() string {
	if s.n == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%s..%s)", bench.FormatMs(s.med), bench.FormatMs(s.lo), bench.FormatMs(s.hi))
}

func writeLatency(results []bench.Result, out io.Writer) error {
	points := groupPoints(results)
	if len(points) == 0 {
		return fmt.Errorf("no SETUP/load-PCT/run-N results")
	}
	writeLoadTable(out, points, func(setup string) string { return setup })
	writeStageTables(out, points, func(setup string) string { return setup })
	return nil
}

// loadRow is one load point reduced to the median and range of its runs.
type loadRow struct {
	offered                 float64
	ach, p50, p99, b50, b99 spread
}

func rowOf(p *point) loadRow {
	var ach, p50, p99, b50, b99 []float64
	for _, r := range p.runs {
		if r.Produce == nil || r.Produce.Latency == nil {
			continue
		}
		ach = append(ach, r.Produce.MsgsPerSec)
		p50 = append(p50, r.Produce.Latency.P50Ms)
		p99 = append(p99, r.Produce.Latency.P99Ms)
		if t := stageOf(r.BrokerStages, "total"); t != nil {
			b50 = append(b50, t.P50Ms)
			b99 = append(b99, t.P99Ms)
		}
	}
	return loadRow{p.runs[0].OfferedPerSec, spreadOf(ach), spreadOf(p50), spreadOf(p99), spreadOf(b50), spreadOf(b99)}
}

// writeLoadTable writes one row per load point: the median and min..max
// of its runs for the achieved rate, the client's p50/p99 and the
// brokers' total p50/p99; name gives the setup column.
func writeLoadTable(out io.Writer, points []*point, name func(setup string) string) {
	fmt.Fprintln(out, "| setup | load | offered msg/s | achieved msg/s: median (min..max) | client p50 ms | client p99 ms | broker total p50 ms | broker total p99 ms | runs |")
	fmt.Fprintln(out, "|---|---:|---:|---|---|---|---|---|---:|")
	for _, p := range points {
		row := rowOf(p)
		a := row.ach
		fmt.Fprintf(out, "| %s | %d%% | %s | %s (%s..%s) | %s | %s | %s | %s | %d |\n", name(p.setup), p.pct,
			bench.FormatCount(row.offered), bench.FormatCount(a.med), bench.FormatCount(a.lo), bench.FormatCount(a.hi),
			row.p50.ms(), row.p99.ms(), row.b50.ms(), row.b99.ms(), a.n)
	}
}

// writeStageTables writes, per setup that reports them, a table of the
// brokers' stages and one of the client's (bench.Result.ClientStages:
// send_lag, request_wait, request, from_send): rows are stages, columns
// loads, cells the median over the runs of the stage's p50 / p99; name
// gives the setup's title.
func writeStageTables(out io.Writer, points []*point, name func(setup string) string) {
	for i := 0; i < len(points); {
		j := i
		for j < len(points) && points[j].setup == points[i].setup {
			j++
		}
		group := points[i:j]
		i = j
		writeStageTable(out, group, name(group[0].setup)+": broker stages", brokerStages)
		writeStageTable(out, group, name(group[0].setup)+": client stages", clientStages)
	}
}

func brokerStages(r *bench.Result) []bench.StageLatency { return r.BrokerStages }
func clientStages(r *bench.Result) []bench.StageLatency { return r.ClientStages }

// writeStageTable writes one setup's table of the stages of(run) holds;
// nothing when no run holds any.
func writeStageTable(out io.Writer, group []*point, title string, of func(*bench.Result) []bench.StageLatency) {
	stages := stageNames(group, of)
	if len(stages) == 0 {
		return
	}
	fmt.Fprintf(out, "\n**%s, p50 / p99 in ms (median over the runs)**\n\n", title)
	fmt.Fprint(out, "| stage |")
	for _, p := range group {
		fmt.Fprintf(out, " %d%% |", p.pct)
	}
	fmt.Fprint(out, "\n|---|")
	for range group {
		fmt.Fprint(out, "---:|")
	}
	fmt.Fprintln(out)
	for _, stage := range stages {
		fmt.Fprintf(out, "| %s |", stage)
		for _, p := range group {
			var s50, s99 []float64
			for k := range p.runs {
				if s := stageOf(of(&p.runs[k]), stage); s != nil {
					s50 = append(s50, s.P50Ms)
					s99 = append(s99, s.P99Ms)
				}
			}
			if len(s50) == 0 {
				fmt.Fprint(out, " - |")
				continue
			}
			fmt.Fprintf(out, " %s / %s |", bench.FormatMs(spreadOf(s50).med), bench.FormatMs(spreadOf(s99).med))
		}
		fmt.Fprintln(out)
	}
}

// stageNames lists the stages the runs of group report, in their order.
func stageNames(group []*point, of func(*bench.Result) []bench.StageLatency) []string {
	var out []string
	for _, p := range group {
		for k := range p.runs {
			for _, s := range of(&p.runs[k]) {
				if !slices.Contains(out, s.Stage) {
					out = append(out, s.Stage)
				}
			}
		}
	}
	return out
}

func stageOf(stages []bench.StageLatency, stage string) *bench.StageLatency {
	for i := range stages {
		if stages[i].Stage == stage {
			return &stages[i]
		}
	}
	return nil
}
