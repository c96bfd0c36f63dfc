package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// floe bench startup (issue 21): how long a broker takes from process start
// to /readyz and to its first acknowledged produce, over a data directory
// prepared beforehand (scripts/bench/startup.sh builds them). Each run
// starts `floe serve`, measures, and kills it with SIGKILL, so every run
// after the first is a crash recovery of the same directory.

// startupRun is one start of the broker.
type startupRun struct {
	ReadySec   float64 `json:"ready_s"`
	ProduceSec float64 `json:"first_produce_s"`
	LoadBefore string  `json:"load_before"`
	LoadAfter  string  `json:"load_after"`
}

// startupResult is what the subcommand prints.
type startupResult struct {
	Label   string       `json:"label"`
	Runs    []startupRun `json:"runs"`
	Ready   spread       `json:"ready_s"`
	Produce spread       `json:"first_produce_s"`
}

// spread is the median and range of a few runs.
type spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{Median: m, Min: s[0], Max: s[len(s)-1]}
}

type startupConfig struct {
	floe, dataDir, kafkaAddr, adminAddr, topic, label, logFile string
	runs                                                       int
	fresh                                                      bool
	timeout                                                    time.Duration
	serveArgs                                                  []string
}

func runStartupBench(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("floe bench startup", flag.ContinueOnError)
	var c startupConfig
	fs.StringVar(&c.floe, "floe", "", "floe binary to start (default: this one)")
	fs.StringVar(&c.dataDir, "data-dir", "", "the broker's data directory (required)")
	fs.StringVar(&c.kafkaAddr, "kafka-addr", "127.0.0.1:29392", "the broker's Kafka address")
	fs.StringVar(&c.adminAddr, "admin-addr", "127.0.0.1:29744", "the broker's admin (HTTP) address")
	fs.StringVar(&c.topic, "topic", "floe-startup", "topic of the first produce (auto-created if it does not exist)")
	fs.StringVar(&c.label, "label", "", "name of this run, kept in the output")
	fs.StringVar(&c.logFile, "log", "", "append the broker's output to this file (default: discard)")
	fs.IntVar(&c.runs, "runs", 3, "starts to time")
	fs.BoolVar(&c.fresh, "fresh", false, "empty the data directory before each start (the empty-directory case)")
	fs.DurationVar(&c.timeout, "timeout", 20*time.Minute, "longest one start may take")
	serveFlags := fs.String("serve-flags", "", "more `floe serve` flags, space-separated")
	jsonOut := fs.Bool("json", false, "print the result as one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if c.dataDir == "" {
		return usagef("floe bench startup: --data-dir is required")
	}
	if c.runs < 1 || c.runs > 100 {
		return usagef("--runs must be between 1 and 100, got %d", c.runs)
	}
	if c.floe == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		c.floe = exe
	}
	c.serveArgs = strings.Fields(*serveFlags)
	res := startupResult{Label: c.label}
	for i := 0; i < c.runs; i++ {
		r, err := startOnce(ctx, c)
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		res.Runs = append(res.Runs, r)
	}
	var ready, produce []float64
	for _, r := range res.Runs {
		ready, produce = append(ready, r.ReadySec), append(produce, r.ProduceSec)
	}
	res.Ready, res.Produce = spreadOf(ready), spreadOf(produce)
	if *jsonOut {
		return json.NewEncoder(out).Encode(res)
	}
	writeStartupText(out, res)
	return nil
}

func writeStartupText(out io.Writer, res startupResult) {
	for i, r := range res.Runs {
		fmt.Fprintf(out, "run %d: /readyz %.3f s, first produce %.3f s (load %s -> %s)\n",
			i+1, r.ReadySec, r.ProduceSec, r.LoadBefore, r.LoadAfter)
	}
	fmt.Fprintf(out, "%s: /readyz median %.3f s (%.3f..%.3f), first produce median %.3f s (%.3f..%.3f)\n",
		res.Label, res.Ready.Median, res.Ready.Min, res.Ready.Max, res.Produce.Median, res.Produce.Min, res.Produce.Max)
}

// startOnce starts the broker, times /readyz and the first acknowledged
// produce from the moment before the process starts, then kills it.
func startOnce(ctx context.Context, c startupConfig) (startupRun, error) {
	if c.fresh {
		if err := os.RemoveAll(c.dataDir); err != nil {
			return startupRun{}, err
		}
	}
	logOut := io.Discard
	if c.logFile != "" {
		f, err := os.OpenFile(c.logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return startupRun{}, err
		}
		defer f.Close()
		logOut = f
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	args := append([]string{"serve", "--data-dir", c.dataDir, "--kafka-addr", c.kafkaAddr,
		"--admin-addr", c.adminAddr}, c.serveArgs...)
	cmd := exec.Command(c.floe, args...)
	cmd.Stdout, cmd.Stderr = logOut, logOut
	run := startupRun{LoadBefore: loadAverage()}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return run, err
	}
	// exited is closed once the process is gone (waitErr then says how),
	// so both pollReady and the deferred kill can wait on it.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}()
	produced := make(chan time.Duration, 1)
	go func() { produced <- firstProduce(ctx, c.kafkaAddr, c.topic, start) }()
	ready, err := pollReady(ctx, c.adminAddr, start, exited)
	if err != nil {
		if errors.Is(err, errBrokerExited) {
			err = fmt.Errorf("%w: %v", err, waitErr)
		}
		return run, err
	}
	p := <-produced
	if p < 0 {
		return run, fmt.Errorf("no acknowledged produce within %v", c.timeout)
	}
	run.ReadySec, run.ProduceSec, run.LoadAfter = ready.Seconds(), p.Seconds(), loadAverage()
	return run, nil
}

// errBrokerExited: the broker stopped before /readyz answered 200.
var errBrokerExited = errors.New("the broker exited before /readyz answered 200")

// pollReady asks /readyz every 5 ms until it answers 200, and returns the
// time since start.
func pollReady(ctx context.Context, addr string, start time.Time, exited <-chan struct{}) (time.Duration, error) {
	hc := &http.Client{Timeout: time.Second}
	for {
		resp, err := hc.Get("http://" + addr + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start), nil
			}
		}
		select {
		case <-exited:
			return 0, errBrokerExited
		case <-ctx.Done():
			return 0, errors.New("/readyz did not answer 200 in time")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// firstProduce writes one record with acks=all (a franz-go client with its
// defaults, so idempotent, as users get it, but retrying every 10 ms and
// asking for the topic's creation if it does not exist) until one is
// acknowledged, and returns the time since start; -1 if ctx ends.
func firstProduce(ctx context.Context, addr, topic string, start time.Time) time.Duration {
	for ctx.Err() == nil {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }),
			kgo.MetadataMinAge(10*time.Millisecond), kgo.UnknownTopicRetries(-1), kgo.AllowAutoTopicCreation())
		if err != nil {
			return -1
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Value: []byte("startup")}).FirstErr()
		cancel()
		cl.Close()
		if err == nil {
			return time.Since(start)
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
	return -1
}

// loadAverage is /proc/loadavg's first three fields ("?" where there is none).
func loadAverage() string {
	b, err := os.ReadFile(filepath.Join("/proc", "loadavg"))
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
