package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/floe-broker/floe/jepsen/check"
	"github.com/floe-broker/floe/jepsen/nemesis"
	"gonum.org/v1/plot/vg/vgimg"
)

// Files a run directory holds.
const (
	HistoryFile  = "history.jsonl"  // every operation, streamed during the run
	TimelineFile = "timeline.jsonl" // the nemesis's faults, one per line
	ResultsFile  = "results.json"   // check.Report
	SummaryFile  = "summary.txt"    // check.Report.Summary plus run facts
	PlotFile     = "plot.png"
	RunFile      = "run.json" // the run's parameters
)

// WriteTimeline writes the nemesis timeline as JSON lines.
func WriteTimeline(dir string, tl []nemesis.Event) error {
	f, err := os.Create(filepath.Join(dir, TimelineFile))
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, ev := range tl {
		if err := enc.Encode(ev); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// ReadTimeline reads a timeline written by WriteTimeline.
func ReadTimeline(dir string) ([]nemesis.Event, error) {
	f, err := os.Open(filepath.Join(dir, TimelineFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []nemesis.Event
	dec := json.NewDecoder(f)
	for dec.More() {
		var ev nemesis.Event
		if err := dec.Decode(&ev); err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// WriteResults writes results.json and summary.txt (header lines first).
func WriteResults(dir string, rep check.Report, header string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ResultsFile), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, SummaryFile), []byte(header+rep.Summary()), 0o644)
}

// WriteJSON writes v, indented, to dir/name.
func WriteJSON(dir, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644)
}

func savePNG(img *vgimg.Canvas, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}
