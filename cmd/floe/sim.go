package main

// floe sim: run the deterministic simulator outside `go test`.
//
//	floe sim --seed 42                       replay one seed, bit for bit
//	floe sim --seed 42 --trace t.txt         ... and write its whole trace
//	floe sim --seeds 5000 --workers 2        a campaign over seeds 1..5000
//	--corrupt, --reassign                    force disk corruption, membership changes on in every seed
//	--replace-disk                           force the disk-loss replacement fault on in every seed (a third draw it)
//	--all-faults                             --corrupt --reassign --replace-disk --lying
//	--long                                   long seeds: 60 to 600 simulated seconds of faults each
//	--lying                                  force the lying fsync on one node on in every seed (40% draw it)
//	--join                                   force a broker joining with --join on in every seed (a third draw it)
//	--auth                                   force SASL/SCRAM and ACLs on in every seed (a third draw them)
//	--fsync-pipeline 1                       one fsync round in flight (the lockstep; default 2, pipelined)
//	--cpuprofile cpu.out                     write a CPU profile of the run (go tool pprof; also on SIGINT/SIGTERM)
//	--memprofile heap.out                    write a heap profile (live objects) at the end or on SIGINT/SIGTERM
//
// A campaign prints every failing seed's report as it is found, then the
// figures: seeds, simulated hours, events per second, violations by kind.
// It exits 1 if any seed failed.

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/floe-broker/floe/jepsen/history"
	"github.com/floe-broker/floe/sim"
)

func init() { addCommand("sim", "run simulator seeds (replay one, or a campaign)", runSim) }

type simFlags struct {
	seed    int64
	seeds   int
	start   int64
	workers int
	corrupt bool
	// replaceDisk forces the disk-loss replacement fault on.
	replaceDisk bool
	// allFaults forces corrupt, reassign, replaceDisk and lying on.
	allFaults  bool
	reassign   bool
	long       bool
	lying      bool
	join       bool
	auth       bool
	tracePath  string
	historyOut string
	verbose    bool
	// fsyncPipeline, if not 0, is the brokers' SyncPipeline (1 or 2).
	fsyncPipeline int
	// cpuProfile, if set, is where a CPU profile of the whole command
	// (a replay or a campaign) is written.
	cpuProfile string
	// memProfile, if set, is where a heap profile (live objects after a
	// collection) is written when the command ends or is interrupted.
	memProfile string
}

func runSim(args []string) error {
	var f simFlags
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.Int64Var(&f.seed, "seed", 0, "replay this one seed and print its report")
	fs.IntVar(&f.seeds, "seeds", 0, "run a campaign over this many seeds")
	fs.Int64Var(&f.start, "start", 1, "first seed of a campaign")
	fs.IntVar(&f.workers, "workers", runtime.NumCPU(), "seeds run in parallel in a campaign")
	fs.BoolVar(&f.corrupt, "corrupt", false, "force disk corruption (of a minority of each group) on in every seed; by default about half the seeds draw it")
	fs.BoolVar(&f.reassign, "reassign", false, "force membership changes (reassignment, decommission) on in every seed; by default about half the seeds draw them")
	fs.BoolVar(&f.replaceDisk, "replace-disk", false, "force the disk-loss replacement fault (a node's whole disk wiped, restarted under the same id; within the damage budget) on in every seed; by default about a third of the seeds draw it")
	fs.BoolVar(&f.allFaults, "all-faults", false, "force every optional fault on in every seed: --corrupt --reassign --replace-disk --lying")
	fs.BoolVar(&f.long, "long", false, "long seeds: a safety phase of 60 to 600 simulated seconds each")
	fs.BoolVar(&f.lying, "lying", false, "force the lying fsync (one node, segment files; its losses within the corruption budget) on in every seed; by default about 40% of the seeds draw it")
	fs.BoolVar(&f.join, "join", false, "force the broker-join fault (one more broker started in the safety phase on an empty disk with --join) on in every seed; by default about a third of the seeds draw it")
	fs.BoolVar(&f.auth, "auth", false, "force SASL/SCRAM authentication and ACLs, with the ACL workload, on in every seed; by default about a third of the seeds draw them")
	fs.StringVar(&f.tracePath, "trace", "", "with --seed: write the whole trace to this file")
	fs.StringVar(&f.historyOut, "history", "", "with --seed: write the history (JSON lines) to this file")
	fs.BoolVar(&f.verbose, "v", false, "print every seed's one-line result")
	fs.IntVar(&f.fsyncPipeline, "fsync-pipeline", 0, "rounds of group-commit fsyncs in flight at once on every broker: 1 or 2 (0: the broker default, 2, pipelined rounds; 1 replays a seed found in the lockstep); another schedule, so a seed's run is not comparable bit for bit")
	fs.StringVar(&f.memProfile, "memprofile", "", "write a heap profile (live objects after a collection) to this file when the run ends or is stopped by SIGINT/SIGTERM, for go tool pprof")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the run (replay or campaign) to this file, for go tool pprof")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if f.fsyncPipeline < 0 || f.fsyncPipeline > 2 {
		return fmt.Errorf("--fsync-pipeline %d: want 1 or 2", f.fsyncPipeline)
	}
	stopProfiles, err := startProfiles(f)
	if err != nil {
		return err
	}
	defer stopProfiles()
	// A heavy seed may be stopped before it ends (timeout, ^C, a memory
	// guard's SIGTERM): the profiles of the part that ran are what one
	// wants then, so write them.
	if f.cpuProfile != "" || f.memProfile != "" {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			s := <-sig
			stopProfiles()
			fmt.Fprintf(os.Stderr, "floe sim: %v: profiles of the run so far written\n", s)
			os.Exit(130)
		}()
	}
	sim.UseSimGC()
	switch {
	case f.seed != 0 && f.seeds == 0:
		return replaySeed(f)
	case f.seeds > 0 && f.seed == 0:
		return campaign(f)
	}
	fmt.Fprintln(os.Stderr, "floe sim: give --seed N (replay) or --seeds N (campaign)")
	fs.Usage()
	return errUsage
}

func options(seed int64, f simFlags) sim.Options {
	o := sim.ChooseOptions(seed)
	if f.allFaults {
		o = o.WithAllFaults()
	}
	if f.corrupt {
		o = o.WithCorruption()
	}
	if f.reassign {
		o = o.WithReassign()
	}
	if f.replaceDisk {
		o = o.WithReplaceDisk()
	}
	if f.lying {
		o = o.WithLying()
	}
	if f.join {
		o = o.WithJoin()
	}
	if f.long {
		o = o.WithLong()
	}
	if f.auth {
		o = o.WithAuth()
	}
	o.Broker.SyncPipeline = f.fsyncPipeline
	return o
}

func replaySeed(f simFlags) error {
	o := options(f.seed, f)
	if f.tracePath != "" {
		o.TraceKeep = -1
	}
	began := time.Now()
	res := sim.Run(o)
	fmt.Print(res.Summary())
	fmt.Printf("trace hash %s (%v wall)\n", res.TraceHash, time.Since(began).Round(time.Millisecond))
	if f.tracePath != "" {
		if err := os.WriteFile(f.tracePath, []byte(strings.Join(res.Trace, "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	if f.historyOut != "" {
		out, err := os.Create(f.historyOut)
		if err != nil {
			return err
		}
		if err := history.Write(out, res.History); err != nil {
			out.Close()
			return err
		}
		if err := out.Close(); err != nil {
			return err
		}
	}
	if res.Failed() {
		fmt.Println("last trace lines:")
		for _, l := range res.TraceTail(40) {
			fmt.Println("\t" + l)
		}
		return fmt.Errorf("seed %d failed", f.seed)
	}
	return nil
}

// campaignTotals are a campaign's figures.
type campaignTotals struct {
	seeds      int
	failed     []int64
	simTime    time.Duration
	events     uint64
	violations map[string]int
	known      map[string]int
	acked      int
	coverage   sim.Coverage
}

func campaign(f simFlags) error {
	seeds := make(chan int64)
	results := make(chan *sim.Result)
	var wg sync.WaitGroup
	for i := 0; i < max(f.workers, 1); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range seeds {
				results <- sim.Run(options(s, f))
			}
		}()
	}
	go func() {
		for s := f.start; s < f.start+int64(f.seeds); s++ {
			seeds <- s
		}
		close(seeds)
		wg.Wait()
		close(results)
	}()
	began := time.Now()
	tot := campaignTotals{violations: map[string]int{}, known: map[string]int{}}
	for res := range results {
		tot.add(res)
		if res.Failed() {
			fmt.Print(res.Summary())
		} else if f.verbose {
			fmt.Printf("ok seed %d: %v simulated, %d events, %d acked\n", res.Options.Seed, res.Stats.SimTime, res.Stats.Events, res.Stats.Acked)
		}
		if tot.seeds%100 == 0 {
			fmt.Fprintf(os.Stderr, "... %d seeds, %d failed, %v wall\n", tot.seeds, len(tot.failed), time.Since(began).Round(time.Second))
		}
	}
	tot.print(time.Since(began), f.workers)
	fmt.Print(tot.coverage.Table())
	if len(tot.failed) > 0 {
		return fmt.Errorf("%d of %d seeds failed", len(tot.failed), tot.seeds)
	}
	return nil
}

func (t *campaignTotals) add(res *sim.Result) {
	t.seeds++
	t.coverage.Add(res)
	t.simTime += res.Stats.SimTime
	t.events += res.Stats.Events
	t.acked += res.Stats.Acked
	if res.Failed() {
		t.failed = append(t.failed, res.Options.Seed)
	}
	for _, k := range res.Known {
		name, _, _ := strings.Cut(strings.TrimPrefix(k, "KNOWN BUG "), ":")
		t.known[name]++
	}
	kinds := map[string]bool{}
	for _, v := range res.Violations {
		kind, _, _ := strings.Cut(v, ":")
		if kind == "checker" {
			fields := strings.Fields(v)
			if len(fields) > 1 {
				kind += " " + fields[1]
			}
		}
		kinds[kind] = true
	}
	for kind := range kinds {
		t.violations[kind]++ // seeds, not lines
	}
}

func (t *campaignTotals) print(wall time.Duration, workers int) {
	sort.Slice(t.failed, func(i, j int) bool { return t.failed[i] < t.failed[j] })
	fmt.Printf("campaign: %d seeds, %d failed, %.2f simulated hours, %d events, %.0f events/s over %d workers, %d acknowledged writes, %v wall\n",
		t.seeds, len(t.failed), t.simTime.Hours(), t.events, float64(t.events)/wall.Seconds(), workers, t.acked, wall.Round(time.Second))
	for _, k := range sortedKeys(t.violations) {
		fmt.Printf("violations %-40s in %d seeds\n", k, t.violations[k])
	}
	for _, k := range sortedKeys(t.known) {
		fmt.Printf("known bug %-40s in %d seeds (not failed)\n", k, t.known[k])
	}
	if len(t.failed) > 0 {
		fmt.Printf("failed seeds: %v\n", t.failed)
	}
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// startProfiles starts the CPU profile f asks for and creates the heap
// profile's file up front (a bad path fails now, not after a long run); it
// returns the function that writes the profiles out, safe to call more
// than once and from the signal handler's goroutine.
func startProfiles(f simFlags) (stop func(), err error) {
	var cpu, heap *os.File
	if f.memProfile != "" {
		if heap, err = os.Create(f.memProfile); err != nil {
			return nil, err
		}
	}
	if f.cpuProfile != "" {
		if cpu, err = os.Create(f.cpuProfile); err == nil {
			if err = pprof.StartCPUProfile(cpu); err != nil {
				cpu.Close()
			}
		}
		if err != nil {
			if heap != nil {
				heap.Close()
			}
			return nil, err
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if cpu != nil {
				pprof.StopCPUProfile()
				cpu.Close()
			}
			if heap != nil {
				writeHeapProfile(heap)
			}
		})
	}, nil
}

// writeHeapProfile writes the live heap to out and closes it, after a
// collection so that it shows what is retained.
func writeHeapProfile(out *os.File) {
	defer out.Close()
	runtime.GC()
	if err := pprof.WriteHeapProfile(out); err != nil {
		fmt.Fprintf(os.Stderr, "floe sim: heap profile: %v\n", err)
	}
}
