package main

import (
	"fmt"
	"image/color"
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
	p.Title.Text = "Produce latency against offered load (100-byte records, acks=all)"
	p.X.Label.Text = "achieved msg/s (log)"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Label.Text = "latency, ms (log): p99 solid, p50 dashed"
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	drawn := false
	for i, s := range r.sweepSystems("load") {
		var p50, p99 plotter.XYs
		for _, res := range r.sweep(s.label, "load") {
			if res.Produce == nil || res.Produce.Latency == nil {
				continue
			}
			x := res.Produce.MsgsPerSec
			// A log axis cannot show 0: floor at 1 µs.
			p50 = append(p50, plotter.XY{X: x, Y: max(res.Produce.Latency.P50Ms, 0.001)})
			p99 = append(p99, plotter.XY{X: x, Y: max(res.Produce.Latency.P99Ms, 0.001)})
		}
		if len(p99) == 0 {
			continue
		}
		for j, pts := range []plotter.XYs{p99, p50} {
			line, points, err := plotter.NewLinePoints(pts)
			if err != nil {
				return nil, false, err
			}
			line.Color, points.Color = plotutil.Color(i), plotutil.Color(i)
			points.Shape = plotutil.Shape(i)
			if j == 1 {
				line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			} else {
				p.Legend.Add(fmt.Sprintf("%s (%s)", s.name, s.label), line, points)
			}
			p.Add(line, points)
		}
		drawn = true
	}
	if !drawn {
		return nil, false, nil
	}
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
