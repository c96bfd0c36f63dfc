package main

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

const (
	plotThroughputFile = "bench-throughput-vs-size.png"
	plotLatencyFile    = "bench-latency-vs-load.png"
)

// plot draws both plots into dir and returns their paths as the doc links
// them (rel is dir relative to the doc). A plot without data is skipped.
func (r *report) plot(dir, rel string) (plotFiles, error) {
	var out plotFiles
	if p, ok, err := r.plotThroughput(); err != nil {
		return out, err
	} else if ok {
		if err := p.Save(8*vg.Inch, 5*vg.Inch, filepath.Join(dir, plotThroughputFile)); err != nil {
			return out, err
		}
		out.throughputVsSize = rel + "/" + plotThroughputFile
	}
	if p, ok, err := r.plotLatency(); err != nil {
		return out, err
	} else if ok {
		if err := p.Save(8*vg.Inch, 5*vg.Inch, filepath.Join(dir, plotLatencyFile)); err != nil {
			return out, err
		}
		out.latencyVsLoad = rel + "/" + plotLatencyFile
	}
	return out, nil
}

func (r *report) plotThroughput() (*plot.Plot, bool, error) {
	p := plot.New()
	p.Title.Text = "Durable produce throughput against message size (acks=all)"
	p.X.Label.Text = "message size (bytes, log)"
	p.Y.Label.Text = "MB/s of record values (log)"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	var lines []any
	xMin, xMax := 0.0, 0.0
	for _, s := range r.sweepSystems("size") {
		var pts plotter.XYs
		for _, res := range r.sweep(s.label, "size") {
			if res.Produce != nil && res.Produce.MBPerSec > 0 && res.MessageBytes > 0 {
				x := float64(res.MessageBytes)
				pts = append(pts, plotter.XY{X: x, Y: res.Produce.MBPerSec})
				if xMin == 0 || x < xMin {
					xMin = x
				}
				xMax = max(xMax, x)
			}
		}
		if len(pts) > 0 {
			lines = append(lines, fmt.Sprintf("%s (%s)", s.name, s.label), pts)
		}
	}
	if len(lines) == 0 {
		return nil, false, nil
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return nil, false, err
	}
	if d := r.disk.DsyncMBPerSec; d > 0 {
		limit, err := plotter.NewLine(plotter.XYs{{X: xMin, Y: d}, {X: xMax, Y: d}})
		if err != nil {
			return nil, false, err
		}
		limit.Color, limit.Dashes = color.Gray{Y: 90}, []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(limit)
		p.Legend.Add("disk: 1 MiB O_DSYNC writes", limit)
	}
	p.Y.Max *= 30 // headroom on the log axis, so the legend covers no data
	return p, true, nil
}

func (r *report) plotLatency() (*plot.Plot, bool, error) {
	p := plot.New()
	p.Title.Text = "Produce latency against offered load (100-byte records, acks=all)\n" +
		"points: the median of the runs; bars: their min..max"
	p.X.Label.Text = "achieved msg/s (log)"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.TickerFunc(ticks125)
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	p.Y.Label.Text = "latency, ms (log): p99 solid, p50 dashed"
	drawn := false
	points := r.loadPoints()
	for i, colour := 0, 0; i < len(points); colour++ {
		j := i
		for j < len(points) && points[j].setup == points[i].setup {
			j++
		}
		ok, err := plotLoadSetup(p, colour, points[i:j])
		if err != nil {
			return nil, false, err
		}
		drawn = drawn || ok
		i = j
	}
	if !drawn {
		return nil, false, nil
	}
	p.X.Min, p.X.Max = p.X.Min/1.25, p.X.Max*1.25 // room for the bars' ends
	target, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: targetRF3P99Ms}, {X: p.X.Max, Y: targetRF3P99Ms}})
	if err != nil {
		return nil, false, err
	}
	target.Color, target.Dashes = color.Gray{Y: 90}, []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(target)
	p.Legend.Add(fmt.Sprintf("target: RF=3 p99 ≤ %.0f ms at half max", targetRF3P99Ms), target)
	p.Y.Min = min(p.Y.Min, targetRF3P99Ms/2)
	p.Y.Max *= 30 // headroom on the log axis, so the legend covers no data
	return p, true, nil
}

// bar is one error bar: how far below and above the point it reaches.
type bar = struct{ Low, High float64 }

// medianErrors are points at the medians of the runs, with error bars
// from the runs' min to their max, in both directions.
type medianErrors struct {
	plotter.XYs
	plotter.XErrors
	plotter.YErrors
}

// plotLoadSetup draws one setup's load points (group, rising load) in the
// i-th colour (false when it has none): its p99 and p50 medians against the median achieved rate,
// each with its runs' range as error bars. A log axis cannot show 0, so
// latencies are floored at 1 µs.
func plotLoadSetup(p *plot.Plot, i int, group []*point) (bool, error) {
	lines := [2]medianErrors{}
	for _, pt := range group {
		row := rowOf(pt)
		if row.ach.n == 0 {
			continue
		}
		xErr := bar{Low: row.ach.med - row.ach.lo, High: row.ach.hi - row.ach.med}
		for k, s := range []spread{row.p99, row.p50} {
			med := max(s.med, 0.001)
			lines[k].XYs = append(lines[k].XYs, plotter.XY{X: row.ach.med, Y: med})
			lines[k].XErrors = append(lines[k].XErrors, xErr)
			lines[k].YErrors = append(lines[k].YErrors, bar{Low: med - max(s.lo, 0.001), High: max(s.hi, 0.001) - med})
		}
	}
	if len(lines[0].XYs) == 0 {
		return false, nil
	}
	for k := range lines {
		line, points, err := plotter.NewLinePoints(lines[k].XYs)
		if err != nil {
			return false, err
		}
		yBars, err := plotter.NewYErrorBars(lines[k])
		if err != nil {
			return false, err
		}
		xBars, err := plotter.NewXErrorBars(lines[k])
		if err != nil {
			return false, err
		}
		line.Color, points.Color = plotutil.Color(i), plotutil.Color(i)
		yBars.Color, xBars.Color = plotutil.Color(i), plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		if k == 1 {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		} else {
			p.Legend.Add(fmt.Sprintf("%s (%s)", systemName(group[0].setup), group[0].setup), line, points)
		}
		p.Add(line, points, yBars, xBars)
	}
	return true, nil
}

// ticks125 labels 1, 2 and 5 times each power of ten in min..max, so a log
// axis that spans less than a decade still has labels (plot.LogTicks
// labels powers of ten only); the other LogTicks marks stay unlabelled.
func ticks125(lo, hi float64) []plot.Tick {
	ticks := plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	for i := range ticks {
		ticks[i].Label = ""
	}
	for p := math.Pow(10, math.Floor(math.Log10(lo))); p <= hi; p *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if v := m * p; v >= lo && v <= hi {
				ticks = append(ticks, plot.Tick{Value: v, Label: count(v)})
			}
		}
	}
	return ticks
}
