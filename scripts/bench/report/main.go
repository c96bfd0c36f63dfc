package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/floe-broker/floe/internal/bench"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: report summary|maxrate|write|latency [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "summary":
		err = summary(os.Stdin, os.Stderr)
	case "maxrate":
		err = maxRate(os.Args[2:], os.Stdout)
	case "write":
		err = write(os.Args[2:])
	case "latency":
		err = latency(os.Args[2:], os.Stdout)
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "report %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// readResults reads one JSON result a line; blank lines are skipped.
func readResults(r io.Reader) ([]bench.Result, error) {
	var out []bench.Result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var res bench.Result
		if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

func readResultsFile(path string) ([]bench.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readResults(f)
}

func summary(in io.Reader, out io.Writer) error {
	results, err := readResults(in)
	if err != nil {
		return err
	}
	for _, r := range results {
		fmt.Fprintf(out, "  = %s\n", oneLine(r))
	}
	return nil
}

// oneLine is "label: N msg/s, M MB/s, p99 X ms".
func oneLine(r bench.Result) string {
	s := r.Produce
	if s == nil {
		s = r.Consume
	}
	if s == nil {
		return r.Label + ": no figures"
	}
	line := fmt.Sprintf("%s: %.0f msg/s, %.1f MB/s", r.Label, s.MsgsPerSec, s.MBPerSec)
	if s.Latency != nil {
		line += fmt.Sprintf(", p50 %.2f ms, p99 %.2f ms", s.Latency.P50Ms, s.Latency.P99Ms)
	}
	if s.Errors > 0 {
		line += fmt.Sprintf(", %d errors", s.Errors)
	}
	return line
}

// maxRate prints the produce msg/s of the run labelled --label (0 when it
// is missing or failed, so the script's load sweep degrades to nothing).
func maxRate(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("maxrate", flag.ContinueOnError)
	path := fs.String("results", "", "results file")
	label := fs.String("label", "", "run label")
	if err := fs.Parse(args); err != nil {
		return err
	}
	results, err := readResultsFile(*path)
	if err != nil {
		return err
	}
	r := find(results, *label)
	rate := 0.0
	if r != nil && r.Produce != nil {
		rate = r.Produce.MsgsPerSec
	}
	fmt.Fprintf(out, "%.0f\n", rate)
	return nil
}

// find returns the last result with the label (a rerun supersedes).
func find(results []bench.Result, label string) *bench.Result {
	for i := len(results) - 1; i >= 0; i-- {
		if results[i].Label == label {
			return &results[i]
		}
	}
	return nil
}
