package report

import (
	"image/color"
	"sort"

	"github.com/floe-broker/floe/jepsen/history"
	"github.com/floe-broker/floe/jepsen/nemesis"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// faultColors shades each kind of fault window.
var faultColors = map[nemesis.Kind]color.Color{
	nemesis.Kill:            color.NRGBA{R: 230, G: 80, B: 80, A: 60},
	nemesis.Pause:           color.NRGBA{R: 240, G: 170, B: 40, A: 60},
	nemesis.PartitionOne:    color.NRGBA{R: 80, G: 120, B: 230, A: 60},
	nemesis.PartitionHalf:   color.NRGBA{R: 120, G: 80, B: 220, A: 60},
	nemesis.PartitionBridge: color.NRGBA{R: 60, G: 170, B: 170, A: 60},
	nemesis.Membership:      color.NRGBA{R: 120, G: 120, B: 120, A: 60},
}

// windows shades fault windows over a plot's whole height.
type windows struct{ events []nemesis.Event }

func (w windows) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, ev := range w.events {
		end := ev.End
		if end == 0 {
			end = int64(p.X.Max * 1e9)
		}
		x0, x1 := trX(float64(ev.Start)/1e9), trX(float64(end)/1e9)
		pts := []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}}
		clr := faultColors[ev.Kind]
		if clr == nil {
			clr = faultColors[nemesis.Membership]
		}
		c.FillPolygon(clr, c.ClipPolygonXY(pts))
	}
}

// produceSeries turns the history's produces into per-second throughput
// (ok and uncertain) and latency points (ms, at completion time in s).
func produceSeries(h history.History) (okRate, infoRate plotter.XYs, okLat, infoLat plotter.XYs) {
	ops, err := history.Pairs(h)
	if err != nil {
		return
	}
	okPer, infoPer := map[int64]int{}, map[int64]int{}
	var last int64
	for _, op := range ops {
		if op.Invoke.F != history.Produce || op.Done.Time == history.Never {
			continue
		}
		sec := op.Done.Time / 1e9
		last = max(last, sec)
		pt := plotter.XY{X: float64(op.Done.Time) / 1e9, Y: float64(op.Done.Time-op.Invoke.Time) / 1e6}
		if op.Done.Type == history.OK {
			okPer[sec]++
			okLat = append(okLat, pt)
		} else {
			infoPer[sec]++
			infoLat = append(infoLat, pt)
		}
	}
	for s := int64(0); s <= last; s++ {
		okRate = append(okRate, plotter.XY{X: float64(s) + 0.5, Y: float64(okPer[s])}) // the second's middle
		infoRate = append(infoRate, plotter.XY{X: float64(s) + 0.5, Y: float64(infoPer[s])})
	}
	sort.Slice(okLat, func(i, j int) bool { return okLat[i].X < okLat[j].X })
	return okRate, infoRate, okLat, infoLat
}

// Plot draws throughput (produces per second, acknowledged and uncertain)
// above latency (ms per produce, log scale), both over seconds since the
// run started, fault windows shaded by kind, into a PNG at path.
func Plot(h history.History, timeline []nemesis.Event, title, path string) error {
	okRate, infoRate, okLat, infoLat := produceSeries(h)
	top, bottom := plot.New(), plot.New()
	top.Title.Text = title
	top.Y.Label.Text = "produces / s"
	bottom.Y.Label.Text = "produce latency (ms)"
	bottom.X.Label.Text = "seconds since start"
	bottom.Y.Scale = plot.LogScale{}
	bottom.Y.Tick.Marker = plot.LogTicks{}
	shade := windows{timeline}
	top.Add(shade)
	bottom.Add(shade)
	if err := addLine(top, okRate, "acknowledged", color.NRGBA{B: 200, A: 255}); err != nil {
		return err
	}
	if err := addLine(top, infoRate, "info / fail", color.NRGBA{R: 200, A: 255}); err != nil {
		return err
	}
	if err := addScatter(bottom, okLat, "acknowledged", color.NRGBA{B: 200, A: 120}); err != nil {
		return err
	}
	if err := addScatter(bottom, infoLat, "info / fail", color.NRGBA{R: 200, A: 200}); err != nil {
		return err
	}
	xmax := max(top.X.Max, bottom.X.Max)
	for _, ev := range timeline {
		xmax = max(xmax, float64(ev.End)/1e9)
	}
	top.X.Min, bottom.X.Min, top.X.Max, bottom.X.Max = 0, 0, xmax, xmax
	if bottom.Y.Min <= 0 {
		bottom.Y.Min = 0.1
	}
	top.Legend.Top, bottom.Legend.Top = true, true
	for kind, clr := range faultColors {
		if used(timeline, kind) {
			top.Legend.Add(string(kind), swatch{clr})
		}
	}
	img := vgimg.New(12*vg.Inch, 7*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Millimeter * 4, PadTop: vg.Millimeter * 2,
		PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	plots := [][]*plot.Plot{{top}, {bottom}}
	canvases := plot.Align(plots, tiles, dc)
	top.Draw(canvases[0][0])
	bottom.Draw(canvases[1][0])
	return savePNG(img, path)
}

func used(tl []nemesis.Event, k nemesis.Kind) bool {
	for _, ev := range tl {
		if ev.Kind == k {
			return true
		}
	}
	return false
}

// swatch is a legend thumbnail of a fault color.
type swatch struct{ clr color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(s.clr, pts)
}

func addLine(p *plot.Plot, xys plotter.XYs, name string, clr color.Color) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = clr
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

func addScatter(p *plot.Plot, xys plotter.XYs, name string, clr color.Color) error {
	var pos plotter.XYs
	for _, xy := range xys {
		if xy.Y > 0 { // log scale
			pos = append(pos, xy)
		}
	}
	if len(pos) == 0 {
		return nil
	}
	s, err := plotter.NewScatter(pos)
	if err != nil {
		return err
	}
	s.GlyphStyle.Color, s.GlyphStyle.Radius, s.GlyphStyle.Shape = clr, vg.Points(1.2), draw.CircleGlyph{}
	p.Add(s)
	p.Legend.Add(name, s)
	return nil
}
