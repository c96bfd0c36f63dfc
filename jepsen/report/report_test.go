package report

import (
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/floe-broker/floe/jepsen/check"
	"github.com/floe-broker/floe/jepsen/history"
	"github.com/floe-broker/floe/jepsen/nemesis"
)

// synthetic: 60 s of produces, slow and uncertain during one fault window.
func synthetic() (history.History, []nemesis.Event) {
	var t int64
	rec := history.NewRecorder(nil, func() int64 { return t })
	for i := 0; i < 600; i++ {
		t = int64(i) * 1e8
		v := history.Record{Topic: "t", Offset: -1, Value: strconv.Itoa(i)}
		inv := rec.Invoke(history.Op{Process: int64(i), F: history.Produce, Records: []history.Record{v}})
		t += 5e6
		typ := history.OK
		if i >= 200 && i < 300 {
			t, typ = t+1e9, history.Info
		}
		rec.Complete(inv, typ, history.Op{Records: []history.Record{v}})
	}
	return rec.History(), []nemesis.Event{{Kind: nemesis.Kill, Start: 20e9, End: 30e9, Nodes: []int{2}}}
}

func TestPlotWritesAPNG(t *testing.T) {
	h, tl := synthetic()
	path := filepath.Join(t.TempDir(), PlotFile)
	if p := os.Getenv("PLOT_OUT"); p != "" {
		path = p
	}
	if err := Plot(h, tl, "test", path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 400 {
		t.Fatalf("plot is %v", b)
	}
}

func TestProduceSeries(t *testing.T) {
	h, _ := synthetic()
	okRate, infoRate, okLat, infoLat := produceSeries(h)
	sum := func(xs []float64) (s float64) {
		for _, x := range xs {
			s += x
		}
		return s
	}
	var ok, info []float64
	for i := range okRate {
		ok, info = append(ok, okRate[i].Y), append(info, infoRate[i].Y)
	}
	if sum(ok) != 500 || sum(info) != 100 || len(okLat) != 500 || len(infoLat) != 100 {
		t.Fatalf("ok %v info %v lat %d/%d", sum(ok), sum(info), len(okLat), len(infoLat))
	}
	if okLat[0].Y != 5 {
		t.Fatalf("latency %v ms, want 5", okLat[0].Y)
	}
}

func TestTimelineAndResultsFiles(t *testing.T) {
	dir := t.TempDir()
	_, tl := synthetic()
	if err := WriteTimeline(dir, tl); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTimeline(dir)
	if err != nil || !reflect.DeepEqual(got, tl) {
		t.Fatalf("timeline round trip: %v %v", got, err)
	}
	h, _ := synthetic()
	rep := check.Check(h, check.Options{})
	if err := WriteResults(dir, rep, "run: test\n"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil || len(b) == 0 || string(b[:10]) != "run: test\n" {
		t.Fatalf("summary: %q %v", b, err)
	}
}
